#include "views/tree_dot.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "views/tree_display.h"

namespace arbor::views {
namespace {

// Columns of a run's text in its label: enough to recognise the run, narrow enough that a
// top-to-bottom layout stays a column.
constexpr int kRunTextWidth = 40;

// Inside a DOT double-quoted string only `"` and `\` are special; `\n` is a label line break.
std::string DotQuote(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// A token's text as a label line: escaped (tree_display.h), then quoted for DOT.
std::string LabelText(const std::string& text, int width) {
  return DotQuote(TruncateToWidth(EscapeTokenText(text), width));
}

bool OnCommittedPath(v1::NodeStatus status) {
  return status == v1::NODE_STATUS_PROMPT || status == v1::NODE_STATUS_COMMITTED ||
         status == v1::NODE_STATUS_INSERTED;
}

bool Dead(v1::NodeStatus status) {
  return status == v1::NODE_STATUS_PRUNED || status == v1::NODE_STATUS_BACKSPACED;
}

// The attributes that draw a node of `status` whose strategy has colour `color`: one place for the
// tree's nodes and the legend's samples of them.
std::string StatusStyle(v1::NodeStatus status, const std::string& color) {
  switch (status) {
    case v1::NODE_STATUS_PROMPT:
      return "fillcolor=\"#e8e8e8\", penwidth=2";
    case v1::NODE_STATUS_COMMITTED:
      return absl::StrCat("color=\"", color, "\", fillcolor=\"#fff4c2\", penwidth=3");
    case v1::NODE_STATUS_INSERTED:
      return absl::StrCat("color=\"", color,
                          "\", fillcolor=\"#efe4ff\", penwidth=3, shape=octagon");
    case v1::NODE_STATUS_EXPLORED:
      return absl::StrCat("color=\"", color, "\", fillcolor=white");
    case v1::NODE_STATUS_BACKSPACED:
      return "color=\"#d62728\", fontcolor=\"#8c8c8c\", fillcolor=\"#f4f4f4\", "
             "style=\"rounded,filled,dashed\"";
    default:  // PRUNED
      return "color=\"#b0b0b0\", fontcolor=\"#9a9a9a\", fillcolor=\"#f4f4f4\", "
             "style=\"rounded,filled,dashed\"";
  }
}

// A collapsed run's extra marking: a double outline (peripheries) on top of its status style.
constexpr char kRunStyle[] = "peripheries=2";

// What each strategy's colour and each status's style mean, drawn with the same attributes as
// the tree: strategies in one row, statuses (and a collapsed run) in the row below, each row
// kept in enum order by invisible edges.
std::string Legend() {
  std::string nodes;
  std::vector<std::string> strategies, statuses;
  for (int s = 1; s < v1::Strategy_ARRAYSIZE; ++s) {
    if (!v1::Strategy_IsValid(s)) continue;
    const auto strategy = static_cast<v1::Strategy>(s);
    strategies.push_back(absl::StrCat("legend_s", s));
    absl::StrAppend(&nodes, "    ", strategies.back(), " [label=\"", StrategyName(strategy),
                    "\", color=\"", StrategyHexColor(strategy),
                    "\", fillcolor=white, penwidth=3];\n");
  }
  const std::string neutral = StrategyHexColor(v1::STRATEGY_ARGMAX);
  for (int s = 1; s < v1::NodeStatus_ARRAYSIZE; ++s) {
    if (!v1::NodeStatus_IsValid(s)) continue;
    const auto status = static_cast<v1::NodeStatus>(s);
    statuses.push_back(absl::StrCat("legend_t", s));
    absl::StrAppend(&nodes, "    ", statuses.back(), " [label=\"", NodeStatusName(status), "\", ",
                    StatusStyle(status, neutral), "];\n");
  }
  statuses.push_back("legend_run");
  absl::StrAppend(&nodes, "    legend_run [label=\"run of N tokens\", ",
                  StatusStyle(v1::NODE_STATUS_COMMITTED, neutral), ", ", kRunStyle, "];\n");
  const auto row = [](const std::vector<std::string>& names) {
    return absl::StrCat("    { rank=same; ", absl::StrJoin(names, " -> "), " [style=invis]; }\n");
  };
  return absl::StrCat(
      "  subgraph cluster_legend {\n"
      "    label=\"legend: outline = strategy, fill and line = status\"; fontsize=10; "
      "style=rounded; color=\"#c0c0c0\";\n"
      "    node [fontsize=9];\n",
      nodes, row(strategies), row(statuses), "    ", strategies.front(), " -> ", statuses.front(),
      " [style=invis];\n  }\n");
}

// The tree drawn with every linear run collapsed into one node (docs/TREE_FORMAT.md).
class DotView {
 public:
  explicit DotView(const v1::Tree& tree) : tree_(tree) {
    for (int i = 0; i < tree.nodes_size(); ++i) index_[tree.nodes(i).id()] = i;
    // Exports are in pre-order, so a parent has its box before its child is placed.
    for (const v1::TreeNode& n : tree.nodes()) {
      const v1::TreeNode* parent = Find(n.parent());
      const auto parent_item = parent != nullptr ? item_of_.find(parent->id()) : item_of_.end();
      if (parent_item != item_of_.end() && Collapsible(n) && Collapsible(*parent) &&
          parent->children_size() == 1 && parent->status() == n.status()) {
        items_[parent_item->second].push_back(&n);
        item_of_[n.id()] = parent_item->second;
      } else {
        item_of_[n.id()] = static_cast<int>(items_.size());
        items_.push_back({&n});
      }
    }
  }

  std::string Render() const {
    std::string out = absl::StrCat(
        "digraph arbor_tree {\n"
        "  graph [rankdir=TB, fontname=\"Helvetica\", label=\"job ",
        DotQuote(EscapeTokenText(tree_.job_id())), "  (root ", tree_.root(), ", ",
        tree_.nodes_size(), " nodes in ", items_.size(),
        " boxes)\", labelloc=t, nodesep=0.3, ranksep=0.35];\n"
        "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n"
        "  edge [arrowsize=0.6];\n");
    out += Legend();
    for (const std::vector<const v1::TreeNode*>& item : items_) {
      out += item.size() == 1 ? NodeStatement(*item.front()) : RunStatement(item);
    }
    for (const v1::TreeNode& n : tree_.nodes()) {
      const auto parent = item_of_.find(n.parent());
      if (parent == item_of_.end() || parent->second == item_of_.at(n.id())) continue;
      std::string attrs;
      if (OnCommittedPath(n.status())) {
        attrs = " [penwidth=3]";
      } else if (Dead(n.status())) {
        attrs = " [color=\"#b0b0b0\", style=dashed]";
      }
      out +=
          absl::StrCat("  ", Name(parent->second), " -> ", Name(item_of_.at(n.id())), attrs, ";\n");
    }
    out += "}\n";
    return out;
  }

 private:
  const v1::TreeNode* Find(int32_t id) const {
    const auto it = index_.find(id);
    return it == index_.end() ? nullptr : &tree_.nodes(it->second);
  }

  // A branch point has several children that are not backspaced (a backspace's re-draw is a
  // sibling of the token it replaced, not an alternative).
  bool BranchPoint(const v1::TreeNode& n) const {
    int live = 0;
    for (int32_t c : n.children()) {
      const v1::TreeNode* child = Find(c);
      live += child != nullptr && child->status() != v1::NODE_STATUS_BACKSPACED;
    }
    return live > 1;
  }

  // Runs are made of committed, explored or pruned tokens that are neither branch points nor
  // branch candidates: those stay boxes of their own, with their metrics and scores.
  bool Collapsible(const v1::TreeNode& n) const {
    if (n.status() != v1::NODE_STATUS_COMMITTED && n.status() != v1::NODE_STATUS_EXPLORED &&
        n.status() != v1::NODE_STATUS_PRUNED) {
      return false;
    }
    const v1::TreeNode* parent = Find(n.parent());
    return !BranchPoint(n) && !(parent != nullptr && BranchPoint(*parent));
  }

  // An item is named after its first node, so a run keeps the name of where it starts.
  std::string Name(int item) const { return absl::StrCat("n", items_[item].front()->id()); }

  std::string NodeStatement(const v1::TreeNode& n) const {
    std::string label;
    if (n.status() == v1::NODE_STATUS_PROMPT) {
      label = absl::StrCat("prompt\\n", tree_.prompt_token_ids_size(), " tokens");
    } else {
      label = absl::StrCat(
          "\\\"", LabelText(NodeText(n), kRunTextWidth), "\\\"  #", n.id(), "\\n",
          absl::StrFormat("H=%.2f V=%.2f", n.metrics().entropy(), n.metrics().varentropy()));
      if (n.branch_score() != 0.0f) label += absl::StrFormat("\\nscore %.3f", n.branch_score());
      if (!n.branch_note().empty()) {
        label += absl::StrCat("\\n", LabelText(n.branch_note(), kRunTextWidth));
      }
    }
    return absl::StrCat("  n", n.id(), " [label=\"", label, "\", tooltip=\"",
                        StrategyName(n.strategy()), " ", NodeStatusName(n.status()),
                        absl::StrFormat(" logprob=%.4f", n.logprob()), "\", ",
                        StatusStyle(n.status(), StrategyHexColor(n.strategy())), "];\n");
  }

  // One box for a linear run: its text (truncated), its length and node ids, its strategies
  // counted; outlined in the colour of its most frequent strategy.
  std::string RunStatement(const std::vector<const v1::TreeNode*>& run) const {
    std::string text;
    std::array<int, v1::Strategy_ARRAYSIZE> counts{};
    for (const v1::TreeNode* n : run) {
      text += NodeText(*n);
      if (v1::Strategy_IsValid(n->strategy())) ++counts[n->strategy()];
    }
    int top = 0;
    std::vector<std::string> strategies;
    for (int s = 1; s < v1::Strategy_ARRAYSIZE; ++s) {
      if (counts[s] == 0) continue;
      if (counts[s] > counts[top]) top = s;
      strategies.push_back(
          absl::StrCat(StrategyName(static_cast<v1::Strategy>(s)), " ", counts[s]));
    }
    const v1::TreeNode& first = *run.front();
    const v1::TreeNode& last = *run.back();
    const std::string label =
        absl::StrCat("\\\"", LabelText(text, kRunTextWidth), "\\\"\\n", run.size(), " tokens  #",
                     first.id(), "-#", last.id(), "\\n", absl::StrJoin(strategies, ", "));
    return absl::StrCat(
        "  n", first.id(), " [label=\"", label, "\", tooltip=\"", NodeStatusName(first.status()),
        " run of ", run.size(), " tokens, positions ", first.position(), "-", last.position(),
        "\", ", StatusStyle(first.status(), StrategyHexColor(static_cast<v1::Strategy>(top))), ", ",
        kRunStyle, "];\n");
  }

  const v1::Tree& tree_;
  std::unordered_map<int32_t, int> index_;
  std::vector<std::vector<const v1::TreeNode*>> items_;  // Boxes: one node or a run.
  std::unordered_map<int32_t, int> item_of_;             // Node id -> its box.
};

}  // namespace

std::string TreeToDot(const v1::Tree& tree) { return DotView(tree).Render(); }

}  // namespace arbor::views
