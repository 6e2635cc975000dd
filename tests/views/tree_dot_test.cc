// Graphviz DOT export at scale: a 2,000-token job collapses into a handful of boxes (linear runs
// of committed and of pruned tokens, each with its text and length), while the branch point, its
// scored candidates, a backspaced and an inserted token stay boxes of their own; the legend names
// every strategy; labels are escaped; and Graphviz's `dot` renders the whole thing.
#include "views/tree_dot.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/views/synthetic_tree.h"
#include "views/tree_display.h"

namespace arbor::views {
namespace {

// 0 prompt; 1..999 committed (1 needs every kind of escaping); 1000 the branch point;
// candidates 1001 (winner) and 1002 (pruned); their rollouts: 1003..1021 committed, then 500
// more committed; 1022..1040 pruned; an insert; 300 committed, the last with a backspaced child
// and its re-draw; 200 committed after the re-draw.
struct LongJob {
  SyntheticTree tree{"j-\"long\""};
  int32_t branch_point, winner, loser, insert, backspaced, redraw;
  LongJob() {
    int32_t n = tree.Add(0, "\"q\\\n\x1b[31m", v1::NODE_STATUS_COMMITTED);
    n = tree.Chain(n, 998, v1::NODE_STATUS_COMMITTED);
    branch_point = tree.Chain(n, 1, v1::NODE_STATUS_COMMITTED);
    winner =
        tree.Add(branch_point, " yes", v1::NODE_STATUS_COMMITTED, v1::STRATEGY_BRANCH, -0.5f, 1);
    loser = tree.Add(branch_point, " no", v1::NODE_STATUS_PRUNED, v1::STRATEGY_BRANCH, -1.25f, 1);
    n = tree.Chain(winner, 19, v1::NODE_STATUS_COMMITTED, " w", 1);
    tree.Chain(loser, 19, v1::NODE_STATUS_PRUNED, " x", 1);
    n = tree.Chain(n, 500, v1::NODE_STATUS_COMMITTED);
    insert = tree.Add(n, " ...", v1::NODE_STATUS_INSERTED, v1::STRATEGY_INSERT);
    n = tree.Chain(insert, 300, v1::NODE_STATUS_COMMITTED);
    backspaced = tree.Add(n, " oops", v1::NODE_STATUS_BACKSPACED, v1::STRATEGY_ADAPTIVE);
    redraw = tree.Add(n, " fine", v1::NODE_STATUS_COMMITTED, v1::STRATEGY_RESAMPLE);
    tree.Chain(redraw, 200, v1::NODE_STATUS_COMMITTED);
  }
};

// Node statements outside the legend, by name.
std::vector<std::string> Boxes(const std::string& dot) {
  std::vector<std::string> boxes;
  const std::regex statement(R"(^  (n\d+) \[label=)");
  std::istringstream lines(dot);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, statement)) boxes.push_back(m[1]);
  }
  return boxes;
}

std::string LineOf(const std::string& dot, const std::string& name) {
  const size_t at = dot.find("\n  " + name + " [label=");
  if (at == std::string::npos) return "";
  return dot.substr(at + 1, dot.find('\n', at + 1) - at - 1);
}

TEST(TreeDotScale, LinearRunsCollapseAndSpecialNodesStaySeparate) {
  const LongJob job;
  ASSERT_GT(job.tree.tree().nodes_size(), 2000);
  const std::string dot = TreeToDot(job.tree.tree());
  const std::vector<std::string> boxes = Boxes(dot);
  // prompt, run 1-999, branch point, 2 candidates, winner's run, loser's run, insert, run to the
  // backspace, backspaced, re-draw's run.
  EXPECT_EQ(boxes.size(), 11u) << dot;
  EXPECT_NE(dot.find("rankdir=TB"), std::string::npos);
  // Runs: their length and node range, a double outline.
  EXPECT_NE(LineOf(dot, "n1").find("\\n999 tokens  #1-#999\\nARGMAX 999"), std::string::npos)
      << LineOf(dot, "n1");
  EXPECT_NE(LineOf(dot, "n1").find("peripheries=2"), std::string::npos);
  EXPECT_NE(LineOf(dot, "n1022").find("19 tokens  #1022-#1040"), std::string::npos) << dot;
  EXPECT_NE(LineOf(dot, "n1022").find("style=\"rounded,filled,dashed\""), std::string::npos);
  // The winner's rollout and the committed tokens after it are one run, up to the insert.
  EXPECT_NE(LineOf(dot, "n1003").find("519 tokens  #1003-#1540"), std::string::npos) << dot;
  EXPECT_NE(LineOf(dot, "n" + std::to_string(job.insert + 1)).find("300 tokens"),
            std::string::npos);
  EXPECT_NE(LineOf(dot, "n" + std::to_string(job.redraw)).find("201 tokens"), std::string::npos);
  // Single boxes keep their metrics, candidates their score.
  EXPECT_NE(LineOf(dot, "n1000").find("H=1.50 V=0.50"), std::string::npos);
  EXPECT_NE(LineOf(dot, "n1001").find("score -0.500"), std::string::npos);
  EXPECT_NE(LineOf(dot, "n1002").find("score -1.250"), std::string::npos);
  EXPECT_NE(LineOf(dot, "n" + std::to_string(job.insert)).find("shape=octagon"), std::string::npos);
  EXPECT_NE(LineOf(dot, "n" + std::to_string(job.backspaced)).find("color=\"#d62728\""),
            std::string::npos);
  // Edges join boxes: into a run from the box of its first node's parent.
  EXPECT_NE(dot.find("  n0 -> n1 [penwidth=3];"), std::string::npos);
  EXPECT_NE(dot.find("  n1 -> n1000 [penwidth=3];"), std::string::npos);
  EXPECT_NE(dot.find("  n1000 -> n1002 [color=\"#b0b0b0\", style=dashed];"), std::string::npos);
  EXPECT_NE(dot.find("  n1002 -> n1022 [color=\"#b0b0b0\", style=dashed];"), std::string::npos);
  EXPECT_NE(dot.find(absl::StrCat("  n", job.insert + 1, " -> n", job.backspaced)),
            std::string::npos);
  EXPECT_EQ(dot.find(" -> n2;"), std::string::npos);  // No box inside a run.
}

TEST(TreeDotScale, LegendNamesEveryStrategyAndStatus) {
  const std::string dot = TreeToDot(LongJob().tree.tree());
  const size_t legend = dot.find("subgraph cluster_legend {");
  ASSERT_NE(legend, std::string::npos);
  const std::string body = dot.substr(legend, dot.find("\n  }\n", legend) - legend);
  for (int s = 1; s < v1::Strategy_ARRAYSIZE; ++s) {
    if (!v1::Strategy_IsValid(s)) continue;
    const auto strategy = static_cast<v1::Strategy>(s);
    EXPECT_NE(body.find("[label=\"" + StrategyName(strategy) + "\", color=\"" +
                        StrategyHexColor(strategy) + "\""),
              std::string::npos)
        << StrategyName(strategy);
  }
  for (const char* status :
       {"PROMPT", "COMMITTED", "INSERTED", "EXPLORED", "PRUNED", "BACKSPACED"}) {
    EXPECT_NE(body.find(std::string("[label=\"") + status + "\""), std::string::npos) << status;
  }
  EXPECT_NE(body.find("run of N tokens"), std::string::npos);
}

TEST(TreeDotScale, LabelsAreEscaped) {
  const std::string dot = TreeToDot(LongJob().tree.tree());
  EXPECT_EQ(dot.find('\x1b'), std::string::npos);
  // The run's text: quote and backslash escaped for DOT, newline and ESC shown as escapes.
  EXPECT_NE(LineOf(dot, "n1").find(R"(label="\"\"q\\\\\\n\\x1b[31m w w w)"), std::string::npos)
      << LineOf(dot, "n1");
  // Truncated to its width with an ellipsis.
  EXPECT_NE(LineOf(dot, "n1").find("…\\\"\\n999 tokens"), std::string::npos);
  EXPECT_NE(dot.find(R"(label="job j-\"long\")"), std::string::npos);
  // Every line outside the quoted labels stays one line: each statement ends in ';' or a brace.
  std::istringstream lines(dot);
  std::string line;
  while (std::getline(lines, line)) {
    const char last = line.empty() ? '?' : line.back();
    EXPECT_TRUE(last == ';' || last == '{' || last == '}') << line;
  }
}

TEST(TreeDotScale, GraphvizRendersTheLongJob) {
  if (std::system("command -v dot > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "graphviz `dot` is not installed; skipping the syntax check";
  }
  const std::string dir = testing::TempDir();
  const std::string dot_path = dir + "/tree_dot_test.dot";
  const std::string svg_path = dir + "/tree_dot_test.svg";
  std::ofstream(dot_path) << TreeToDot(LongJob().tree.tree());
  const std::string cmd = "dot -Tsvg '" + dot_path + "' -o '" + svg_path + "' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::stringstream svg;
  svg << std::ifstream(svg_path).rdbuf();
  EXPECT_NE(svg.str().find("<svg"), std::string::npos);
  EXPECT_NE(svg.str().find("999 tokens"), std::string::npos);
  EXPECT_NE(svg.str().find(R"(&quot;&quot;q\\\n\x1b[31m)"), std::string::npos);
  EXPECT_NE(svg.str().find("BRANCH_SAMPLE"), std::string::npos);  // The legend.
  // Readable: Graphviz does not have to shrink a 2,000-token job into a strip. The drawing
  // stays within a screen or two (points).
  std::smatch m;
  const std::string text = svg.str();
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(<svg width="(\d+)pt" height="(\d+)pt")")));
  EXPECT_LT(std::stoi(m[1]), 2000) << m[0];
  EXPECT_LT(std::stoi(m[2]), 2000) << m[0];
}

}  // namespace
}  // namespace arbor::views
