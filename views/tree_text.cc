#include "views/tree_text.h"

#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "views/tree_display.h"

namespace arbor::views {
namespace {

bool OnPath(v1::NodeStatus status) {
  return status == v1::NODE_STATUS_COMMITTED || status == v1::NODE_STATUS_INSERTED;
}

// Columns of the token cell in branch point listings: a few words of rollout.
constexpr int kTokenCellWidth = 24;

class TextView {
 public:
  TextView(const v1::Tree& tree, const TreeTextOptions& options) : tree_(tree), options_(options) {
    for (int i = 0; i < tree.nodes_size(); ++i) index_[tree.nodes(i).id()] = i;
  }

  absl::Status Validate() const {
    if (options_.depth < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("depth: must be at least 1, got ", options_.depth));
    }
    if (options_.around && Find(*options_.around) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("around: node ", *options_.around, " is not in the tree of job ",
                       EscapeTokenText(tree_.job_id()), " (", tree_.nodes_size(),
                       " nodes from root ", tree_.root(), ")"));
    }
    return absl::OkStatus();
  }

  std::string Render() const {
    std::string out = Summary();
    const std::vector<const v1::TreeNode*> path = CommittedPath();
    const v1::TreeNode* focus = options_.around ? Find(*options_.around) : nullptr;
    // The path shown is path[shown_begin, shown_end): whole, or the window around the anchor
    // (the focus node, or the path node its branch left from).
    std::optional<size_t> anchor;
    size_t shown_begin = 1, shown_end = path.size();
    if (focus != nullptr) {
      anchor = PathIndexOfAncestor(*focus, path);
      shown_begin = shown_end = 1;
      if (anchor) {
        const int32_t at = path[*anchor]->position();
        shown_begin = *anchor;
        while (shown_begin > 1 && path[shown_begin - 1]->position() >= at - options_.depth) {
          --shown_begin;
        }
        shown_begin = std::max<size_t>(shown_begin, 1);
        shown_end = *anchor + 1;
        while (shown_end < path.size() && path[shown_end]->position() <= at + options_.depth) {
          ++shown_end;
        }
      }
    }
    std::string flow = shown_begin > 1 ? "…" : "";
    // Branch points keep their number along the whole path, so views around different nodes
    // agree; only those whose marker is in the window are listed.
    std::vector<std::pair<size_t, const v1::TreeNode*>> branch_points;
    size_t number = 0;
    for (size_t k = 0; k + 1 < path.size(); ++k) {
      const v1::TreeNode& from = *path[k];
      const v1::TreeNode& to = *path[k + 1];
      const bool shown = k + 1 >= shown_begin && k + 1 < shown_end;
      int live_children = 0;
      for (int32_t c : from.children()) {
        const v1::TreeNode* child = Find(c);
        if (child == nullptr) continue;
        if (child->status() != v1::NODE_STATUS_BACKSPACED) {
          ++live_children;
        } else if (shown) {
          flow += Colored(absl::StrCat("⟨⌫", EscapeTokenText(child->text()), "⟩"), "9");
        }
      }
      if (live_children > 1) ++number;
      if (!shown) continue;
      if (live_children > 1) {
        branch_points.emplace_back(number, &from);
        flow += Colored(absl::StrCat("[", number, "]"), "1");
      }
      std::string text = FlowTokenText(NodeText(to));
      if (to.status() == v1::NODE_STATUS_INSERTED) text = absl::StrCat("{", text, "}");
      text = Colored(text, StrategyAnsiColor(to.strategy()));
      flow += anchor == k + 1 ? absl::StrCat("⟪", text, "⟫") : text;
    }
    if (shown_end < path.size()) flow += "…";
    if (path.empty()) {
      out += "(the subtree root is not on the committed path)\n";
    } else if (focus == nullptr) {
      out += absl::StrCat("\ncommitted path from node ", path.front()->id(), ":\n", flow, "\n");
    } else if (shown_begin < shown_end) {
      out += absl::StrCat("\ncommitted path around node ", focus->id(), ", positions ",
                          path[shown_begin]->position(), "-", path[shown_end - 1]->position(),
                          ":\n", flow, "\n");
    }
    if (focus != nullptr && !(anchor && path[*anchor] == focus)) {
      out += Descent(*focus, anchor ? path[*anchor] : nullptr);
    }
    for (const auto& [n, point] : branch_points) out += BranchPoint(n, *point);
    if (options_.show_metrics && shown_begin < shown_end) {
      out += MetricsTable({path.begin() + shown_begin, path.begin() + shown_end});
    }
    return out;
  }

 private:
  const v1::TreeNode* Find(int32_t id) const {
    const auto it = index_.find(id);
    return it == index_.end() ? nullptr : &tree_.nodes(it->second);
  }

  // Index in `path` of `node` or of its nearest ancestor on it; nullopt when the export holds
  // none (a subtree off the path).
  std::optional<size_t> PathIndexOfAncestor(const v1::TreeNode& node,
                                            const std::vector<const v1::TreeNode*>& path) const {
    for (const v1::TreeNode* n = &node; n != nullptr; n = Find(n->parent())) {
      for (size_t k = 0; k < path.size(); ++k) {
        if (path[k] == n) return k;
      }
    }
    return std::nullopt;
  }

  // An off-path node's line from the committed path (`from`, null when this export does not
  // reach the path) down to it, at most `depth` tokens of it.
  std::string Descent(const v1::TreeNode& node, const v1::TreeNode* from) const {
    std::vector<const v1::TreeNode*> line;
    for (const v1::TreeNode* n = &node; n != nullptr && n != from; n = Find(n->parent())) {
      line.push_back(n);
    }
    const size_t shown = std::min<size_t>(line.size(), options_.depth);
    std::string text = shown < line.size() ? "…" : "";
    for (size_t k = shown; k-- > 0;) {
      const std::string piece = EscapeTokenText(NodeText(*line[k]));
      text += k == 0 ? absl::StrCat("⟪", piece, "⟫") : piece;
    }
    const std::string origin = from != nullptr ? absl::StrCat("from path node ", from->id())
                                               : absl::StrCat("from node ", line.back()->id(),
                                                              " (the path "
                                                              "is outside this export)");
    return absl::StrCat("\nnode ", node.id(), " is ", NodeStatusName(node.status()),
                        ", off the committed path; its line ", origin, ": \"", text, "\"\n");
  }

  std::string Colored(const std::string& text, const std::string& sgr) const {
    if (!options_.color || sgr == "0") return text;
    return absl::StrCat("\x1b[", sgr, "m", text, "\x1b[0m");
  }

  std::string Summary() const {
    std::array<int, v1::NodeStatus_ARRAYSIZE> statuses{};
    std::array<int, v1::Strategy_ARRAYSIZE> strategies{};
    for (const v1::TreeNode& n : tree_.nodes()) {
      if (v1::NodeStatus_IsValid(n.status())) ++statuses[n.status()];
      if (v1::Strategy_IsValid(n.strategy())) ++strategies[n.strategy()];
    }
    std::string out = absl::StrCat("job ", EscapeTokenText(tree_.job_id()), ": ",
                                   tree_.nodes_size(), " nodes from root ", tree_.root(),
                                   ", prompt ", tree_.prompt_token_ids_size(), " tokens\nstatus:");
    for (int s = 1; s < v1::NodeStatus_ARRAYSIZE; ++s) {
      if (statuses[s] > 0) {
        absl::StrAppend(&out, " ", NodeStatusName(static_cast<v1::NodeStatus>(s)), "=",
                        statuses[s]);
      }
    }
    out += "\nstrategy:";
    for (int s = 1; s < v1::Strategy_ARRAYSIZE; ++s) {
      if (strategies[s] > 0) {
        const auto strategy = static_cast<v1::Strategy>(s);
        absl::StrAppend(&out, " ", Colored(StrategyName(strategy), StrategyAnsiColor(strategy)),
                        "=", strategies[s]);
      }
    }
    return out + "\n";
  }

  // From the export root down through COMMITTED/INSERTED children; empty when the root itself is
  // off the path.
  std::vector<const v1::TreeNode*> CommittedPath() const {
    std::vector<const v1::TreeNode*> path;
    const v1::TreeNode* n = Find(tree_.root());
    if (n == nullptr || !(OnPath(n->status()) || n->status() == v1::NODE_STATUS_PROMPT)) {
      return path;
    }
    while (n != nullptr) {
      path.push_back(n);
      const v1::TreeNode* next = nullptr;
      for (int32_t c : n->children()) {
        const v1::TreeNode* child = Find(c);
        if (child != nullptr && OnPath(child->status())) next = child;
      }
      n = next;
    }
    return path;
  }

  // The rollout a candidate starts: the nodes below it at its branch depth or deeper (nested
  // rollouts). What the winner's path commits afterwards sits at a shallower depth.
  bool InRollout(const v1::TreeNode& candidate, const v1::TreeNode& node) const {
    return node.branch_depth() >= candidate.branch_depth() &&
           node.status() != v1::NODE_STATUS_BACKSPACED;
  }

  int RolloutSize(const v1::TreeNode& candidate) const {
    int count = 0;
    std::vector<const v1::TreeNode*> stack = {&candidate};
    while (!stack.empty()) {
      const v1::TreeNode* n = stack.back();
      stack.pop_back();
      ++count;
      for (int32_t c : n->children()) {
        const v1::TreeNode* child = Find(c);
        if (child != nullptr && InRollout(candidate, *child)) stack.push_back(child);
      }
    }
    return count;
  }

  // The first `depth` tokens of the rollout, along its committed line where a BEAM rollout forks
  // (else its first beam).
  std::string RolloutText(const v1::TreeNode& candidate) const {
    std::string text;
    const v1::TreeNode* n = &candidate;
    for (int level = 0; n != nullptr && level < options_.depth; ++level) {
      text += NodeText(*n);
      const v1::TreeNode* next = nullptr;
      for (int32_t c : n->children()) {
        const v1::TreeNode* child = Find(c);
        if (child == nullptr || !InRollout(candidate, *child)) continue;
        if (next == nullptr || OnPath(child->status())) next = child;
      }
      n = next;
    }
    return text;
  }

  // The decision to branch was taken on the distribution the candidates were drawn from, so
  // the H and V shown are those of the candidates' step, not of the branch point's own token.
  std::string BranchPoint(size_t number, const v1::TreeNode& point) const {
    v1::Metrics decided;
    for (int32_t c : point.children()) {
      const v1::TreeNode* child = Find(c);
      if (child != nullptr && child->status() != v1::NODE_STATUS_BACKSPACED) {
        decided = child->metrics();
        break;
      }
    }
    std::string out =
        absl::StrFormat("\n[%d] branch at node %d, position %d, H=%.2f V=%.2f:\n", number,
                        point.id(), point.position() + 1, decided.entropy(), decided.varentropy());
    for (int32_t c : point.children()) {
      const v1::TreeNode* child = Find(c);
      if (child == nullptr || child->status() == v1::NODE_STATUS_BACKSPACED) continue;
      const bool won = OnPath(child->status());
      out += absl::StrFormat(
          "  %s node %-5d %s score %8.3f  logprob %7.3f  %3d tokens  %s%s\n", won ? "*" : " ",
          child->id(), TokenCell(RolloutText(*child), kTokenCellWidth), child->branch_score(),
          child->logprob(), RolloutSize(*child), NodeStatusName(child->status()),
          child->branch_note().empty() ? "" : absl::StrCat("  ", child->branch_note()));
    }
    return out;
  }

  std::string MetricsTable(const std::vector<const v1::TreeNode*>& nodes) const {
    std::string out = absl::StrFormat("\n%5s %6s %-14s %-9s %8s %6s %6s %6s %6s %6s %6s  %s\n",
                                      "pos", "node", "strategy", "status", "logprob", "H", "V",
                                      "attH", "attV", "agree", "IS", "token");
    for (const v1::TreeNode* node : nodes) {
      const v1::TreeNode& n = *node;
      const v1::Metrics& m = n.metrics();
      out += absl::StrFormat(
          "%5d %6d %-14s %-9s %8.3f %6.2f %6.2f %6.2f %6.2f %6.3f %6.2f  \"%s\"\n", n.position(),
          n.id(), StrategyName(n.strategy()), NodeStatusName(n.status()), n.logprob(), m.entropy(),
          m.varentropy(), m.attn_entropy(), m.attn_varentropy(), m.agreement(),
          m.interaction_strength(), EscapeTokenText(NodeText(n)));
    }
    return out;
  }

  const v1::Tree& tree_;
  const TreeTextOptions& options_;
  std::unordered_map<int32_t, int> index_;
};

}  // namespace

absl::StatusOr<std::string> TreeToText(const v1::Tree& tree, const TreeTextOptions& options) {
  const TextView view(tree, options);
  if (absl::Status valid = view.Validate(); !valid.ok()) return valid;
  return view.Render();
}

}  // namespace arbor::views
