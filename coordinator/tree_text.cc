#include "coordinator/tree_text.h"

#include <array>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/tree_display.h"

namespace arbor::coordinator {
namespace {

bool OnPath(v1::NodeStatus status) {
  return status == v1::NODE_STATUS_COMMITTED || status == v1::NODE_STATUS_INSERTED;
}

// Text of a token inside the flowing path: its newlines stay line breaks (they are the content),
// every other control character is escaped.
std::string FlowText(const std::string& text) {
  std::string out;
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    out += EscapeTokenText(text.substr(start, nl - start)) + "\n";
    start = nl + 1;
  }
  return out + EscapeTokenText(text.substr(start));
}

class TextView {
 public:
  TextView(const v1::Tree& tree, const TreeTextOptions& options) : tree_(tree), options_(options) {
    for (int i = 0; i < tree.nodes_size(); ++i) index_[tree.nodes(i).id()] = i;
  }

  std::string Render() {
    std::string out = Summary();
    const std::vector<const v1::TreeNode*> path = CommittedPath();
    std::string flow;
    std::vector<const v1::TreeNode*> branch_points;
    for (size_t k = 0; k + 1 < path.size(); ++k) {
      const v1::TreeNode& from = *path[k];
      const v1::TreeNode& to = *path[k + 1];
      int live_children = 0;
      for (int32_t c : from.children()) {
        const v1::TreeNode* child = Find(c);
        if (child == nullptr) continue;
        if (child->status() == v1::NODE_STATUS_BACKSPACED) {
          flow += Colored(absl::StrCat("⟨⌫", EscapeTokenText(child->text()), "⟩"), "9");
        } else {
          ++live_children;
        }
      }
      if (live_children > 1) {
        branch_points.push_back(&from);
        flow += Colored(absl::StrCat("[", branch_points.size(), "]"), "1");
      }
      const std::string text = FlowText(to.text());
      flow += to.status() == v1::NODE_STATUS_INSERTED
                  ? Colored("{" + text + "}", StrategyAnsiColor(to.strategy()))
                  : Colored(text, StrategyAnsiColor(to.strategy()));
    }
    if (path.empty()) {
      out += "(the subtree root is not on the committed path)\n";
    } else {
      out += absl::StrCat("\ncommitted path from node ", path.front()->id(), ":\n", flow, "\n");
    }
    for (size_t b = 0; b < branch_points.size(); ++b) {
      out += BranchPoint(b + 1, *branch_points[b]);
    }
    if (options_.show_metrics && path.size() > 1) out += MetricsTable(path);
    return out;
  }

 private:
  const v1::TreeNode* Find(int32_t id) const {
    const auto it = index_.find(id);
    return it == index_.end() ? nullptr : &tree_.nodes(it->second);
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

  // Tokens of the rollout a candidate starts: the nodes below it at its branch depth or deeper
  // (nested rollouts). What the winner's path commits afterwards sits at a shallower depth.
  int RolloutSize(const v1::TreeNode& root) const {
    int count = 0;
    std::vector<const v1::TreeNode*> stack = {&root};
    while (!stack.empty()) {
      const v1::TreeNode* n = stack.back();
      stack.pop_back();
      ++count;
      for (int32_t c : n->children()) {
        const v1::TreeNode* child = Find(c);
        if (child != nullptr && child->branch_depth() >= root.branch_depth()) {
          stack.push_back(child);
        }
      }
    }
    return count;
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
      out += absl::StrFormat("  %s node %-5d %-20s score %8.3f  logprob %7.3f  %3d tokens  %s\n",
                             won ? "*" : " ", child->id(),
                             absl::StrCat("\"", EscapeTokenText(child->text()), "\""),
                             child->branch_score(), child->logprob(), RolloutSize(*child),
                             NodeStatusName(child->status()));
    }
    return out;
  }

  std::string MetricsTable(const std::vector<const v1::TreeNode*>& path) const {
    std::string out = absl::StrFormat("\n%5s %6s %-14s %-9s %8s %6s %6s %6s %6s %6s %6s  %s\n",
                                      "pos", "node", "strategy", "status", "logprob", "H", "V",
                                      "attH", "attV", "agree", "IS", "token");
    for (size_t k = 1; k < path.size(); ++k) {
      const v1::TreeNode& n = *path[k];
      const v1::Metrics& m = n.metrics();
      out += absl::StrFormat(
          "%5d %6d %-14s %-9s %8.3f %6.2f %6.2f %6.2f %6.2f %6.3f %6.2f  \"%s\"\n", n.position(),
          n.id(), StrategyName(n.strategy()), NodeStatusName(n.status()), n.logprob(), m.entropy(),
          m.varentropy(), m.attn_entropy(), m.attn_varentropy(), m.agreement(),
          m.interaction_strength(), EscapeTokenText(n.text()));
    }
    return out;
  }

  const v1::Tree& tree_;
  const TreeTextOptions& options_;
  std::unordered_map<int32_t, int> index_;
};

}  // namespace

std::string TreeToText(const v1::Tree& tree, const TreeTextOptions& options) {
  return TextView(tree, options).Render();
}

}  // namespace arbor::coordinator
