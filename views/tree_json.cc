#include "views/tree_json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "views/tree_display.h"

namespace arbor::views {
namespace {

using nlohmann::json;

json Float(float v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json MetricsToJson(const v1::Metrics& m) {
  return json{{"entropy", Float(m.entropy())},
              {"varentropy", Float(m.varentropy())},
              {"attn_entropy", Float(m.attn_entropy())},
              {"attn_varentropy", Float(m.attn_varentropy())},
              {"attn_head_varentropy", Float(m.attn_head_varentropy())},
              {"agreement", Float(m.agreement())},
              {"interaction_strength", Float(m.interaction_strength())},
              {"logsumexp", Float(m.logsumexp())}};
}

json NodeToJson(const v1::TreeNode& n) {
  json top = json::array();
  for (const v1::TokenLogprob& t : n.top_logprobs()) {
    top.push_back(
        {{"token_id", t.token_id()}, {"logprob", Float(t.logprob())}, {"text", t.text()}});
  }
  return json{{"id", n.id()},
              {"parent", n.parent()},
              {"children", json(std::vector<int32_t>(n.children().begin(), n.children().end()))},
              {"token_id", n.token_id()},
              {"text", n.text()},
              {"position", n.position()},
              {"logprob", Float(n.logprob())},
              {"status", NodeStatusName(n.status())},
              {"strategy", StrategyName(n.strategy())},
              {"branch_score", Float(n.branch_score())},
              {"branch_note", n.branch_note()},
              {"stop_token", n.stop_token()},
              {"allowed_tokens", n.allowed_tokens()},
              {"branch_depth", n.branch_depth()},
              {"sequence_id", std::to_string(n.sequence_id())},
              {"metrics", MetricsToJson(n.metrics())},
              {"top_logprobs", std::move(top)}};
}

// Typed field readers: each names the field (with its path) when it is missing or mistyped.
absl::StatusOr<const json*> Field(const json& object, const char* key, const std::string& path) {
  if (!object.is_object()) return absl::InvalidArgumentError(path + " must be an object");
  const auto it = object.find(key);
  if (it == object.end()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".", key, " is missing"));
  }
  return &*it;
}

absl::StatusOr<int32_t> ReadInt(const json& object, const char* key, const std::string& path) {
  ASSIGN_OR_RETURN(const json* v, Field(object, key, path));
  if (!v->is_number_integer() || v->get<int64_t>() < std::numeric_limits<int32_t>::min() ||
      v->get<int64_t>() > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".", key, " must be a 32-bit integer"));
  }
  return static_cast<int32_t>(v->get<int64_t>());
}

absl::StatusOr<float> ReadFloat(const json& object, const char* key, const std::string& path) {
  ASSIGN_OR_RETURN(const json* v, Field(object, key, path));
  if (v->is_null()) return std::numeric_limits<float>::quiet_NaN();
  if (!v->is_number()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".", key, " must be a number or null"));
  }
  return v->get<float>();
}

absl::StatusOr<std::string> ReadString(const json& object, const char* key,
                                       const std::string& path) {
  ASSIGN_OR_RETURN(const json* v, Field(object, key, path));
  if (!v->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".", key, " must be a string"));
  }
  return v->get<std::string>();
}

absl::StatusOr<std::vector<int32_t>> ReadIntArray(const json& object, const char* key,
                                                  const std::string& path) {
  ASSIGN_OR_RETURN(const json* v, Field(object, key, path));
  if (!v->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".", key, " must be an array"));
  }
  std::vector<int32_t> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (!e.is_number_integer() || e.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
        e.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".", key, "[", i, "] must be a 32-bit integer"));
    }
    out.push_back(static_cast<int32_t>(e.get<int64_t>()));
  }
  return out;
}

absl::Status ReadMetrics(const json& node, const std::string& path, v1::Metrics* m) {
  ASSIGN_OR_RETURN(const json* v, Field(node, "metrics", path));
  const std::string p = path + ".metrics";
  ASSIGN_OR_RETURN(float entropy, ReadFloat(*v, "entropy", p));
  ASSIGN_OR_RETURN(float varentropy, ReadFloat(*v, "varentropy", p));
  ASSIGN_OR_RETURN(float attn_entropy, ReadFloat(*v, "attn_entropy", p));
  ASSIGN_OR_RETURN(float attn_varentropy, ReadFloat(*v, "attn_varentropy", p));
  ASSIGN_OR_RETURN(float attn_head_varentropy, ReadFloat(*v, "attn_head_varentropy", p));
  ASSIGN_OR_RETURN(float agreement, ReadFloat(*v, "agreement", p));
  ASSIGN_OR_RETURN(float interaction_strength, ReadFloat(*v, "interaction_strength", p));
  ASSIGN_OR_RETURN(float logsumexp, ReadFloat(*v, "logsumexp", p));
  m->set_entropy(entropy);
  m->set_varentropy(varentropy);
  m->set_attn_entropy(attn_entropy);
  m->set_attn_varentropy(attn_varentropy);
  m->set_attn_head_varentropy(attn_head_varentropy);
  m->set_agreement(agreement);
  m->set_interaction_strength(interaction_strength);
  m->set_logsumexp(logsumexp);
  return absl::OkStatus();
}

absl::Status ReadNode(const json& node, const std::string& path, v1::TreeNode* n) {
  ASSIGN_OR_RETURN(int32_t id, ReadInt(node, "id", path));
  ASSIGN_OR_RETURN(int32_t parent, ReadInt(node, "parent", path));
  ASSIGN_OR_RETURN(std::vector<int32_t> children, ReadIntArray(node, "children", path));
  ASSIGN_OR_RETURN(int32_t token_id, ReadInt(node, "token_id", path));
  ASSIGN_OR_RETURN(std::string text, ReadString(node, "text", path));
  ASSIGN_OR_RETURN(int32_t position, ReadInt(node, "position", path));
  ASSIGN_OR_RETURN(float logprob, ReadFloat(node, "logprob", path));
  ASSIGN_OR_RETURN(std::string status_name, ReadString(node, "status", path));
  ASSIGN_OR_RETURN(std::string strategy_name, ReadString(node, "strategy", path));
  ASSIGN_OR_RETURN(float branch_score, ReadFloat(node, "branch_score", path));
  ASSIGN_OR_RETURN(int32_t branch_depth, ReadInt(node, "branch_depth", path));
  // Optional: trees written before notes existed have none.
  std::string branch_note;
  if (node.contains("branch_note")) {
    ASSIGN_OR_RETURN(branch_note, ReadString(node, "branch_note", path));
  }
  bool stop_token = false;
  if (node.contains("stop_token")) {
    const json& value = node.at("stop_token");
    if (!value.is_boolean()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ".stop_token must be a boolean"));
    }
    stop_token = value.get<bool>();
  }
  // Optional: trees written before output constraints have none.
  int32_t allowed_tokens = 0;
  if (node.contains("allowed_tokens")) {
    ASSIGN_OR_RETURN(allowed_tokens, ReadInt(node, "allowed_tokens", path));
  }
  ASSIGN_OR_RETURN(std::string sequence, ReadString(node, "sequence_id", path));
  const std::optional<v1::NodeStatus> status = ParseNodeStatusName(status_name);
  if (!status) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".status: unknown status \"", status_name, "\""));
  }
  const std::optional<v1::Strategy> strategy = ParseStrategyName(strategy_name);
  if (!strategy) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".strategy: unknown strategy \"", strategy_name, "\""));
  }
  uint64_t sequence_id = 0;
  const auto [end, ec] =
      std::from_chars(sequence.data(), sequence.data() + sequence.size(), sequence_id);
  if (sequence.empty() || ec != std::errc() || end != sequence.data() + sequence.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".sequence_id must be a decimal uint64 string"));
  }
  n->set_id(id);
  n->set_parent(parent);
  for (int32_t c : children) n->add_children(c);
  n->set_token_id(token_id);
  n->set_text(std::move(text));
  n->set_position(position);
  n->set_logprob(logprob);
  n->set_status(*status);
  n->set_strategy(*strategy);
  n->set_branch_score(branch_score);
  n->set_branch_depth(branch_depth);
  n->set_branch_note(std::move(branch_note));
  n->set_stop_token(stop_token);
  n->set_allowed_tokens(allowed_tokens);
  n->set_sequence_id(sequence_id);
  RETURN_IF_ERROR(ReadMetrics(node, path, n->mutable_metrics()));
  ASSIGN_OR_RETURN(const json* top, Field(node, "top_logprobs", path));
  if (!top->is_array()) return absl::InvalidArgumentError(path + ".top_logprobs must be an array");
  for (size_t i = 0; i < top->size(); ++i) {
    const std::string p = absl::StrCat(path, ".top_logprobs[", i, "]");
    ASSIGN_OR_RETURN(int32_t alt_token, ReadInt((*top)[i], "token_id", p));
    ASSIGN_OR_RETURN(float alt_logprob, ReadFloat((*top)[i], "logprob", p));
    ASSIGN_OR_RETURN(std::string alt_text, ReadString((*top)[i], "text", p));
    v1::TokenLogprob* alt = n->add_top_logprobs();
    alt->set_token_id(alt_token);
    alt->set_logprob(alt_logprob);
    alt->set_text(std::move(alt_text));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Tree> ReadTree(const json& doc) {
  ASSIGN_OR_RETURN(std::string format, ReadString(doc, "format", "tree"));
  if (format != kTreeJsonFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat("tree.format is \"", format, "\", expected \"", kTreeJsonFormat, "\""));
  }
  ASSIGN_OR_RETURN(int32_t version, ReadInt(doc, "version", "tree"));
  if (version != kTreeJsonVersion) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tree.version ", version, " is not supported (this reader knows ", kTreeJsonVersion, ")"));
  }
  v1::Tree tree;
  ASSIGN_OR_RETURN(std::string job_id, ReadString(doc, "job_id", "tree"));
  ASSIGN_OR_RETURN(int32_t root, ReadInt(doc, "root", "tree"));
  ASSIGN_OR_RETURN(std::vector<int32_t> prompt, ReadIntArray(doc, "prompt_token_ids", "tree"));
  tree.set_job_id(std::move(job_id));
  tree.set_root(root);
  for (int32_t id : prompt) tree.add_prompt_token_ids(id);
  ASSIGN_OR_RETURN(const json* nodes, Field(doc, "nodes", "tree"));
  if (!nodes->is_array()) return absl::InvalidArgumentError("tree.nodes must be an array");
  for (size_t i = 0; i < nodes->size(); ++i) {
    RETURN_IF_ERROR(ReadNode((*nodes)[i], absl::StrCat("tree.nodes[", i, "]"), tree.add_nodes()));
  }
  return tree;
}

}  // namespace

std::string TreeToJson(const v1::Tree& tree, int indent) {
  json nodes = json::array();
  for (const v1::TreeNode& n : tree.nodes()) nodes.push_back(NodeToJson(n));
  const json doc{{"format", kTreeJsonFormat},
                 {"version", kTreeJsonVersion},
                 {"job_id", tree.job_id()},
                 {"root", tree.root()},
                 {"prompt_token_ids", json(std::vector<int32_t>(tree.prompt_token_ids().begin(),
                                                                tree.prompt_token_ids().end()))},
                 {"nodes", std::move(nodes)}};
  // Texts are valid UTF-8 when they come from ExportTree; `replace` keeps a foreign message
  // with a bad string printable instead of throwing.
  return doc.dump(indent < 0 ? -1 : indent, ' ', false, json::error_handler_t::replace);
}

absl::StatusOr<v1::Tree> TreeFromJson(const std::string& text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("tree JSON does not parse");
  // The readers check every type before converting, so nothing below should throw; the guard
  // keeps the no-exception-across-libraries rule even for a nlohmann corner case.
  try {
    return ReadTree(doc);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("tree JSON: ", e.what()));
  }
}

}  // namespace arbor::views
