// Tree exports: the GetTree message (whole, subtree, depth limits, top log-probabilities), the
// JSON schema (round trip of every field, errors naming the field), Graphviz DOT (accepted by
// `dot`) and the terminal view of a small hand-built tree.
#include "coordinator/tree/tree_export.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "coordinator/tree/search_tree.h"
#include "views/tree_display.h"
#include "views/tree_dot.h"
#include "views/tree_json.h"
#include "views/tree_text.h"

namespace arbor::coordinator {
namespace {

using google::protobuf::util::MessageDifferencer;

const std::map<int32_t, std::string>& Pieces() {
  static const auto* pieces = new std::map<int32_t, std::string>{
      {11, "Hello"}, {12, " world"}, {13, " there"}, {14, "!"},       {15, "?"},
      {16, " ok"},   {17, " fine"},  {2564, " ..."}, {99, "\xff\"q"}, {20, "a\nb\x1b[31m"}};
  return *pieces;
}

std::string PieceOf(int32_t id) {
  const auto it = Pieces().find(id);
  return it == Pieces().end() ? "<" + std::to_string(id) + ">" : it->second;
}

Step MakeStep(int32_t token, v1::Strategy strategy, uint64_t seq, float h, float v) {
  Step step;
  step.token_id = token;
  step.logprob = -0.25f;
  step.strategy = strategy;
  step.sequence_id = seq;
  step.metrics.set_entropy(h);
  step.metrics.set_varentropy(v);
  step.metrics.set_attn_entropy(1.5f);
  step.metrics.set_attn_varentropy(0.125f);
  step.metrics.set_attn_head_varentropy(0.75f);
  step.metrics.set_agreement(0.0625f);
  step.metrics.set_interaction_strength(2.5f);
  step.metrics.set_logsumexp(11.0f);
  return step;
}

// Ids: 0 prompt, 1 "Hello", 2 " world" / 3 " there" (branch), 4 "!" / 5 "?", 6 " ..." (insert),
// 7 " ok" (backspaced), 8 " fine".
SearchTree HandBuiltTree() {
  SearchTree tree = *SearchTree::Create({1, 2, 3}, 3000, (1ULL << 63) + 5);
  Step hello = MakeStep(11, v1::STRATEGY_ARGMAX, 1, 0.05f, 0.02f);
  hello.top_logprobs = {{11, -0.25f}, {99, -2.0f}};
  (void)*tree.Commit(hello);
  const std::vector<NodeId> kids =
      *tree.OpenBranch(1, {MakeStep(12, v1::STRATEGY_BRANCH, 2, 1.25f, 6.5f),
                           MakeStep(13, v1::STRATEGY_BRANCH, 3, 1.25f, 6.5f)});
  const NodeId bang = *tree.ExtendRollout(kids[0], MakeStep(14, v1::STRATEGY_ADAPTIVE, 2, 0.5f, 1));
  (void)*tree.ExtendRollout(kids[1], MakeStep(15, v1::STRATEGY_ADAPTIVE, 3, 0.5f, 1));
  (void)*tree.ResolveBranch(1, bang, {-0.5f, -1.25f});
  (void)*tree.Insert(MakeStep(2564, v1::STRATEGY_INSERT, 2, 5.5f, 0.05f));
  (void)*tree.Commit(MakeStep(16, v1::STRATEGY_ADAPTIVE, 2, 3.5f, 6));
  (void)*tree.Backspace();
  (void)*tree.Commit(MakeStep(17, v1::STRATEGY_RESAMPLE, 2, 1, 1));
  EXPECT_TRUE(tree.CheckInvariants().ok());
  return tree;
}

v1::Tree Export(const SearchTree& tree, NodeId root = 0, int32_t depth = 0, bool top = false) {
  TreeExportOptions options;
  options.job_id = "job-7";
  options.root = root;
  options.max_depth = depth;
  options.top_logprobs = top ? 64 : 0;
  absl::StatusOr<v1::Tree> out = ExportTree(tree, options, PieceOf);
  EXPECT_TRUE(out.ok()) << out.status();
  return *std::move(out);
}

std::vector<int32_t> Ids(const v1::Tree& tree) {
  std::vector<int32_t> ids;
  for (const v1::TreeNode& n : tree.nodes()) ids.push_back(n.id());
  return ids;
}

TEST(TreeExport, WholeTreeInPreOrderWithEveryField) {
  const SearchTree tree = HandBuiltTree();
  const v1::Tree out = Export(tree, 0, 0, /*top=*/true);
  EXPECT_EQ(out.job_id(), "job-7");
  EXPECT_EQ(out.root(), 0);
  EXPECT_EQ(std::vector<int32_t>(out.prompt_token_ids().begin(), out.prompt_token_ids().end()),
            (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(Ids(out), (std::vector<int32_t>{0, 1, 2, 4, 6, 7, 8, 3, 5}));
  const v1::TreeNode& prompt = out.nodes(0);
  EXPECT_EQ(prompt.parent(), -1);
  EXPECT_EQ(prompt.token_id(), -1);
  EXPECT_EQ(prompt.status(), v1::NODE_STATUS_PROMPT);
  EXPECT_EQ(prompt.sequence_id(), (1ULL << 63) + 5);
  const v1::TreeNode& hello = out.nodes(1);
  EXPECT_EQ(hello.text(), "Hello");
  EXPECT_EQ(std::vector<int32_t>(hello.children().begin(), hello.children().end()),
            (std::vector<int32_t>{2, 3}));
  ASSERT_EQ(hello.top_logprobs_size(), 2);
  EXPECT_EQ(hello.top_logprobs(1).token_id(), 99);
  EXPECT_EQ(hello.top_logprobs(1).text(), "\xEF\xBF\xBD\"q");  // Invalid byte replaced.
  EXPECT_FLOAT_EQ(hello.top_logprobs(1).logprob(), -2.0f);
  const v1::TreeNode& world = out.nodes(2);
  EXPECT_EQ(world.status(), v1::NODE_STATUS_COMMITTED);
  EXPECT_EQ(world.strategy(), v1::STRATEGY_BRANCH);
  EXPECT_FLOAT_EQ(world.branch_score(), -0.5f);
  EXPECT_EQ(world.branch_depth(), 1);
  EXPECT_EQ(world.position(), 4);
  EXPECT_EQ(world.sequence_id(), 2u);
  EXPECT_FLOAT_EQ(world.metrics().varentropy(), 6.5f);
  EXPECT_FLOAT_EQ(world.metrics().interaction_strength(), 2.5f);
  EXPECT_EQ(out.nodes(4).status(), v1::NODE_STATUS_INSERTED);
  EXPECT_EQ(out.nodes(5).status(), v1::NODE_STATUS_BACKSPACED);
  EXPECT_EQ(out.nodes(7).status(), v1::NODE_STATUS_PRUNED);
  EXPECT_FLOAT_EQ(out.nodes(7).branch_score(), -1.25f);
  EXPECT_EQ(Export(tree).nodes(1).top_logprobs_size(), 0);  // Only on request.
}

// The token that ended a sequence is marked, survives JSON, and the views show it as the end of
// the text, not as its piece.
TEST(TreeExport, MarksTheTokensThatEndASequence) {
  const SearchTree tree = HandBuiltTree();
  const int32_t end = tree.node(2).token_id;
  TreeExportOptions options;
  options.is_stop_token = [end](int32_t id) { return id == end; };
  const absl::StatusOr<v1::Tree> out = ExportTree(tree, options, PieceOf);
  ASSERT_TRUE(out.ok()) << out.status();
  for (const v1::TreeNode& n : out->nodes()) {
    EXPECT_EQ(n.stop_token(), n.id() != 0 && n.token_id() == end) << n.id();
  }
  const absl::StatusOr<v1::Tree> back = views::TreeFromJson(views::TreeToJson(*out));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(MessageDifferencer::Equals(*back, *out));
  const absl::StatusOr<std::string> text = views::TreeToText(*out, views::TreeTextOptions{});
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("Hello[1]⟨end⟩!"), std::string::npos) << *text;
  EXPECT_EQ(text->find(" world"), std::string::npos) << "the piece itself is not shown";
  EXPECT_EQ(Export(tree).nodes(2).stop_token(), false) << "unmarked without a predicate";
}

TEST(TreeExport, SubtreesAndDepthLimits) {
  const SearchTree tree = HandBuiltTree();
  EXPECT_EQ(Ids(Export(tree, 1)), (std::vector<int32_t>{1, 2, 4, 6, 7, 8, 3, 5}));
  const v1::Tree one_level = Export(tree, 1, 1);
  EXPECT_EQ(one_level.root(), 1);
  EXPECT_EQ(Ids(one_level), (std::vector<int32_t>{1, 2, 3}));
  // Children are listed even where the depth limit cut them, to ask for them next.
  EXPECT_EQ(one_level.nodes(1).children_size(), 1);
  EXPECT_EQ(one_level.nodes(1).children(0), 4);
  EXPECT_EQ(Ids(Export(tree, 2, 2)), (std::vector<int32_t>{2, 4, 6}));
  EXPECT_EQ(Ids(Export(tree, 5)), (std::vector<int32_t>{5}));
  TreeExportOptions bad;
  bad.root = 9;
  EXPECT_EQ(ExportTree(tree, bad, PieceOf).status().code(), absl::StatusCode::kInvalidArgument);
  bad.root = 0;
  bad.max_depth = -1;
  const absl::Status depth = ExportTree(tree, bad, PieceOf).status();
  EXPECT_NE(depth.message().find("max_depth"), std::string::npos);
  // Without a token decoder the text stays empty.
  EXPECT_EQ(ExportTree(tree, {}, nullptr)->nodes(1).text(), "");
}

TEST(TreeExport, SanitizeUtf8KeepsValidTextAndReplacesBadBytes) {
  EXPECT_EQ(SanitizeUtf8("héllo 天空 🌤"), "héllo 天空 🌤");
  EXPECT_EQ(SanitizeUtf8("a\xC3"), "a\xEF\xBF\xBD");                                // Truncated.
  EXPECT_EQ(SanitizeUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // Overlong.
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // Surrogate.
}

TEST(TreeJson, RoundTripKeepsEveryField) {
  const v1::Tree original = Export(HandBuiltTree(), 0, 0, /*top=*/true);
  const std::string json = views::TreeToJson(original);
  const absl::StatusOr<v1::Tree> back = views::TreeFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  std::string diff;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(original, *back)) << diff;
  // One-line output parses to the same tree.
  EXPECT_TRUE(
      MessageDifferencer::Equals(*views::TreeFromJson(views::TreeToJson(original, -1)), original));
}

TEST(TreeJson, DocumentFollowsTheSchema) {
  const nlohmann::json doc =
      nlohmann::json::parse(views::TreeToJson(Export(HandBuiltTree(), 0, 0, /*top=*/true)));
  EXPECT_EQ(doc["format"], "arbor.tree");
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["job_id"], "job-7");
  EXPECT_EQ(doc["root"], 0);
  EXPECT_EQ(doc["prompt_token_ids"], nlohmann::json({1, 2, 3}));
  ASSERT_EQ(doc["nodes"].size(), 9u);
  const nlohmann::json& prompt = doc["nodes"][0];
  EXPECT_EQ(prompt["status"], "PROMPT");
  EXPECT_EQ(prompt["strategy"], "FORCED");
  EXPECT_EQ(prompt["sequence_id"], "9223372036854775813");  // A string: exact in JavaScript.
  const nlohmann::json& hello = doc["nodes"][1];
  for (const char* key :
       {"id", "parent", "children", "token_id", "text", "position", "logprob", "status", "strategy",
        "branch_score", "branch_depth", "sequence_id", "metrics", "top_logprobs"}) {
    EXPECT_TRUE(hello.contains(key)) << key;
  }
  EXPECT_EQ(hello["children"], nlohmann::json({2, 3}));
  EXPECT_EQ(hello["strategy"], "ARGMAX");
  EXPECT_EQ(hello["status"], "COMMITTED");
  EXPECT_EQ(hello["metrics"]["logsumexp"], 11.0);
  EXPECT_EQ(hello["top_logprobs"][0]["token_id"], 11);
  EXPECT_EQ(doc["nodes"][5]["status"], "BACKSPACED");
}

TEST(TreeJson, NonFiniteFloatsBecomeNull) {
  v1::Tree tree = Export(HandBuiltTree());
  tree.mutable_nodes(1)->mutable_metrics()->set_entropy(std::nanf(""));
  const std::string json = views::TreeToJson(tree);
  EXPECT_TRUE(nlohmann::json::parse(json)["nodes"][1]["metrics"]["entropy"].is_null());
  EXPECT_TRUE(std::isnan(views::TreeFromJson(json)->nodes(1).metrics().entropy()));
}

TEST(TreeJson, BadDocumentsNameTheField) {
  const std::string good = views::TreeToJson(Export(HandBuiltTree()));
  const auto error_of = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json doc = nlohmann::json::parse(good);
    edit(doc);
    return std::string(views::TreeFromJson(doc.dump()).status().message());
  };
  EXPECT_FALSE(views::TreeFromJson("{not json").ok());
  EXPECT_FALSE(views::TreeFromJson("[]").ok());
  EXPECT_NE(error_of([](auto& d) { d["version"] = 2; }).find("tree.version 2"), std::string::npos);
  EXPECT_NE(error_of([](auto& d) { d["format"] = "x"; }).find("tree.format"), std::string::npos);
  EXPECT_NE(error_of([](auto& d) {
              d["nodes"][3]["metrics"].erase("agreement");
            }).find("tree.nodes[3].metrics.agreement is missing"),
            std::string::npos);
  EXPECT_NE(
      error_of([](auto& d) { d["nodes"][1]["status"] = "LOST"; }).find("tree.nodes[1].status"),
      std::string::npos);
  EXPECT_NE(error_of([](auto& d) {
              d["nodes"][1]["strategy"] = 3;
            }).find("tree.nodes[1].strategy must be a string"),
            std::string::npos);
  EXPECT_NE(error_of([](auto& d) {
              d["nodes"][2]["id"] = 1ULL << 40;
            }).find("tree.nodes[2].id must be a 32-bit integer"),
            std::string::npos);
  EXPECT_NE(error_of([](auto& d) {
              d["nodes"][2]["children"][0] = "x";
            }).find("tree.nodes[2].children[0]"),
            std::string::npos);
  EXPECT_NE(error_of([](auto& d) {
              d["nodes"][0]["sequence_id"] = "12a";
            }).find("tree.nodes[0].sequence_id"),
            std::string::npos);
  EXPECT_NE(error_of([](auto& d) {
              d["nodes"][1]["top_logprobs"] = {{{"token_id", 1}}};
            }).find("tree.nodes[1].top_logprobs[0].logprob is missing"),
            std::string::npos);
  // Unknown keys are ignored: later additions to version 1 stay readable.
  EXPECT_TRUE(views::TreeFromJson([&] {
                nlohmann::json d = nlohmann::json::parse(good);
                d["nodes"][1]["future_field"] = true;
                return d.dump();
              }())
                  .ok());
}

TEST(TreeDot, MarksPathPrunedAndStrategies) {
  const std::string dot = views::TreeToDot(Export(HandBuiltTree()));
  EXPECT_EQ(dot.rfind("digraph arbor_tree {", 0), 0u);
  EXPECT_NE(dot.find("n0 [label=\"prompt\\n3 tokens\""), std::string::npos);
  // Committed "Hello": bold, coloured by ARGMAX, with H and V.
  EXPECT_NE(dot.find("n1 [label=\"\\\"Hello\\\"  #1\\nH=0.05 V=0.02\""), std::string::npos);
  EXPECT_NE(dot.find("color=\"" + views::StrategyHexColor(v1::STRATEGY_ARGMAX) +
                     "\", fillcolor=\"#fff4c2\", penwidth=3"),
            std::string::npos);
  EXPECT_NE(dot.find("n1 -> n2 [penwidth=3];"), std::string::npos);
  EXPECT_NE(dot.find("n1 -> n3 [color=\"#b0b0b0\", style=dashed];"), std::string::npos);
  EXPECT_NE(dot.find("score -1.250"), std::string::npos);
  EXPECT_NE(dot.find(views::StrategyHexColor(v1::STRATEGY_INSERT)), std::string::npos);
}

TEST(TreeDot, GraphvizAcceptsTheOutput) {
  if (std::system("command -v dot > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "graphviz `dot` is not installed; skipping the syntax check";
  }
  // A tree whose texts need every kind of escaping: quotes, backslashes, newline, ESC, bad UTF-8.
  SearchTree tree = HandBuiltTree();
  (void)*tree.Commit(MakeStep(20, v1::STRATEGY_HOT_SAMPLE, 2, 5.5f, 0.01f));
  (void)*tree.Commit(MakeStep(99, v1::STRATEGY_BRANCH_SAMPLE, 2, 2, 7));
  const std::string dir = testing::TempDir();
  const std::string dot_path = dir + "/tree_export_test.dot";
  const std::string svg_path = dir + "/tree_export_test.svg";
  std::ofstream(dot_path) << views::TreeToDot(Export(tree));
  const std::string cmd = "dot -Tsvg '" + dot_path + "' -o '" + svg_path + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::stringstream svg;
  svg << std::ifstream(svg_path).rdbuf();
  EXPECT_NE(svg.str().find("<svg"), std::string::npos);
  EXPECT_NE(svg.str().find("&quot;Hello&quot;"), std::string::npos);
}

TEST(TreeText, HandBuiltTreeView) {
  const std::string text = *views::TreeToText(Export(HandBuiltTree()));
  const std::string expected =
      "job job-7: 9 nodes from root 0, prompt 3 tokens\n"
      "status: COMMITTED=4 PRUNED=2 BACKSPACED=1 INSERTED=1 PROMPT=1\n"
      "strategy: ARGMAX=1 ADAPTIVE=3 BRANCH=2 INSERT=1 RESAMPLE=1 FORCED=1\n"
      "\n"
      "committed path from node 0:\n"
      "Hello[1] world!{ ...}⟨⌫ ok⟩ fine\n"
      "\n"
      "[1] branch at node 1, position 4, H=1.25 V=6.50:\n"
      "  * node 2     \" world!\"                score   -0.500  logprob  -0.250    2 tokens  "
      "COMMITTED\n"
      "    node 3     \" there?\"                score   -1.250  logprob  -0.250    2 tokens  "
      "PRUNED\n";
  EXPECT_EQ(text, expected);
}

TEST(TreeText, MetricsTableColourAndEscapes) {
  SearchTree tree = HandBuiltTree();
  (void)*tree.Commit(MakeStep(20, v1::STRATEGY_HOT_SAMPLE, 2, 5.5f, 0.01f));
  views::TreeTextOptions options;
  options.show_metrics = true;
  const std::string plain = *views::TreeToText(Export(tree), options);
  // The flow keeps the newline but escapes the terminal escape sequence.
  EXPECT_NE(plain.find(" finea\nb\\x1b[31m\n"), std::string::npos) << plain;
  EXPECT_EQ(plain.find('\x1b'), std::string::npos);
  EXPECT_NE(plain.find("  pos   node strategy       status     logprob      H      V"),
            std::string::npos);
  EXPECT_NE(plain.find("    8      9 HOT_SAMPLE     COMMITTED   -0.250   5.50   0.01   1.50   0.12"
                       "  0.062   2.50  \"a\\nb\\x1b[31m\""),
            std::string::npos)
      << plain;
  options.color = true;
  const std::string colored = *views::TreeToText(Export(tree), options);
  EXPECT_NE(
      colored.find("\x1b[" + views::StrategyAnsiColor(v1::STRATEGY_INSERT) + "m{ ...}\x1b[0m"),
      std::string::npos);
  EXPECT_NE(colored.find("\x1b[1m[1]\x1b[0m"), std::string::npos);
}

TEST(TreeText, SubtreeOffThePath) {
  const std::string text = *views::TreeToText(Export(HandBuiltTree(), 3));
  EXPECT_NE(text.find("(the subtree root is not on the committed path)"), std::string::npos);
  EXPECT_NE(text.find("PRUNED=2"), std::string::npos);
}

TEST(TreeDisplay, NamesRoundTripAndEscapes) {
  for (int s = 0; s < v1::Strategy_ARRAYSIZE; ++s) {
    if (!v1::Strategy_IsValid(s)) continue;
    const auto strategy = static_cast<v1::Strategy>(s);
    EXPECT_EQ(views::ParseStrategyName(views::StrategyName(strategy)), strategy);
  }
  for (int s = 0; s < v1::NodeStatus_ARRAYSIZE; ++s) {
    if (!v1::NodeStatus_IsValid(s)) continue;
    const auto status = static_cast<v1::NodeStatus>(s);
    EXPECT_EQ(views::ParseNodeStatusName(views::NodeStatusName(status)), status);
  }
  EXPECT_EQ(views::ParseStrategyName("argmax"), std::nullopt);
  EXPECT_EQ(views::EscapeTokenText("a\\b\tc\r\x01\x7f é"), "a\\\\b\\tc\\r\\x01\\x7f é");
  EXPECT_EQ(views::EscapeTokenText("\xC2\x9B"
                                   "2J"),
            "\\u009b2J");  // C1 CSI.
}

}  // namespace
}  // namespace arbor::coordinator
