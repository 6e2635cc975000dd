#include "coordinator/tree_dot.h"

#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/tree_display.h"

namespace arbor::coordinator {
namespace {

// Inside a DOT double-quoted string only `"` and `\` are special; `\n` is a label line break.
std::string DotQuote(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

bool OnCommittedPath(v1::NodeStatus status) {
  return status == v1::NODE_STATUS_PROMPT || status == v1::NODE_STATUS_COMMITTED ||
         status == v1::NODE_STATUS_INSERTED;
}

bool Dead(v1::NodeStatus status) {
  return status == v1::NODE_STATUS_PRUNED || status == v1::NODE_STATUS_BACKSPACED;
}

std::string NodeStatement(const v1::Tree& tree, const v1::TreeNode& n) {
  std::string label;
  if (n.status() == v1::NODE_STATUS_PROMPT) {
    label = absl::StrCat("prompt\\n", tree.prompt_token_ids_size(), " tokens");
  } else {
    label = absl::StrCat(
        "\\\"", DotQuote(EscapeTokenText(n.text())), "\\\"  #", n.id(), "\\n",
        absl::StrFormat("H=%.2f V=%.2f", n.metrics().entropy(), n.metrics().varentropy()));
    if (n.branch_score() != 0.0f) label += absl::StrFormat("\\nscore %.3f", n.branch_score());
  }
  const std::string strategy_color = StrategyHexColor(n.strategy());
  std::string attrs;
  switch (n.status()) {
    case v1::NODE_STATUS_PROMPT:
      attrs = "fillcolor=\"#e8e8e8\", penwidth=2";
      break;
    case v1::NODE_STATUS_COMMITTED:
      attrs = absl::StrCat("color=\"", strategy_color, "\", fillcolor=\"#fff4c2\", penwidth=3");
      break;
    case v1::NODE_STATUS_INSERTED:
      attrs = absl::StrCat("color=\"", strategy_color,
                           "\", fillcolor=\"#efe4ff\", penwidth=3, shape=octagon");
      break;
    case v1::NODE_STATUS_EXPLORED:
      attrs = absl::StrCat("color=\"", strategy_color, "\", fillcolor=white");
      break;
    case v1::NODE_STATUS_BACKSPACED:
      attrs =
          "color=\"#d62728\", fontcolor=\"#8c8c8c\", fillcolor=\"#f4f4f4\", "
          "style=\"rounded,filled,dashed\"";
      break;
    default:  // PRUNED
      attrs =
          "color=\"#b0b0b0\", fontcolor=\"#9a9a9a\", fillcolor=\"#f4f4f4\", "
          "style=\"rounded,filled,dashed\"";
  }
  return absl::StrCat("  n", n.id(), " [label=\"", label, "\", tooltip=\"",
                      StrategyName(n.strategy()), " ", NodeStatusName(n.status()),
                      absl::StrFormat(" logprob=%.4f", n.logprob()), "\", ", attrs, "];\n");
}

}  // namespace

std::string TreeToDot(const v1::Tree& tree) {
  std::string out = absl::StrCat(
      "digraph arbor_tree {\n"
      "  graph [rankdir=LR, fontname=\"Helvetica\", label=\"job ",
      DotQuote(EscapeTokenText(tree.job_id())), "  (root ", tree.root(), ", ", tree.nodes_size(),
      " nodes)\", labelloc=t];\n"
      "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
      "  edge [arrowsize=0.6];\n");
  std::unordered_set<int32_t> present;
  for (const v1::TreeNode& n : tree.nodes()) present.insert(n.id());
  for (const v1::TreeNode& n : tree.nodes()) out += NodeStatement(tree, n);
  for (const v1::TreeNode& n : tree.nodes()) {
    if (!present.count(n.parent())) continue;
    std::string attrs;
    if (OnCommittedPath(n.status())) {
      attrs = " [penwidth=3]";
    } else if (Dead(n.status())) {
      attrs = " [color=\"#b0b0b0\", style=dashed]";
    }
    out += absl::StrCat("  n", n.parent(), " -> n", n.id(), attrs, ";\n");
  }
  out += "}\n";
  return out;
}

}  // namespace arbor::coordinator
