// SearchTree::CheckInvariants: every structural invariant of the tree checked in one pass over
// the nodes plus the totals, for tests and fuzzers. Part of class SearchTree (search_tree.h),
// apart from the operations whose results it checks.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "coordinator/tree/search_tree.h"

namespace arbor::coordinator {
namespace {

absl::Status Internal(const std::string& message) { return absl::InternalError(message); }

}  // namespace

struct SearchTree::Tally {
  std::array<int32_t, v1::NodeStatus_ARRAYSIZE> statuses{};
  std::array<int32_t, v1::Strategy_ARRAYSIZE> strategies{};
  std::vector<bool> backspaced_seen;
  int64_t child_links = 0;
  int32_t open_points = 0;
};

absl::Status SearchTree::CheckInvariants() const {
  if (nodes_.empty() || committed_path_.empty() || committed_path_[0] != kPromptNode) {
    return Internal("the tree has no prompt node at the head of the committed path");
  }
  const Node& root = nodes_[kPromptNode];
  if (root.id != kPromptNode || root.parent != kNoNode || root.status != v1::NODE_STATUS_PROMPT ||
      root.token_id != -1 || root.position != static_cast<int32_t>(prompt_token_ids_.size()) - 1) {
    return Internal("prompt node 0 is malformed");
  }
  Tally tally;
  for (NodeId i = 0; i < size(); ++i) {
    RETURN_IF_ERROR(CheckNode(i, tally));
    RETURN_IF_ERROR(CheckChildren(i, tally));
    RETURN_IF_ERROR(CheckPlacement(i, tally));
  }
  RETURN_IF_ERROR(CheckTotals(tally));
  return CheckOpenBranchRecords();
}

absl::Status SearchTree::CheckNode(NodeId i, Tally& tally) const {
  const Node& n = nodes_[i];
  const std::string at = absl::StrCat("node ", i, ": ");
  if (n.id != i) return Internal(absl::StrCat(at, "id is ", n.id));
  if (!v1::NodeStatus_IsValid(n.status) || n.status == v1::NODE_STATUS_UNSPECIFIED ||
      !v1::Strategy_IsValid(n.strategy) || n.strategy == v1::STRATEGY_UNSPECIFIED) {
    return Internal(at + "status or strategy unset");
  }
  ++tally.statuses[n.status];
  ++tally.strategies[n.strategy];
  if (static_cast<uint64_t>(n.top_offset) + n.top_count > top_pool_.size()) {
    return Internal(at + "top logprobs outside the pool");
  }
  if (i != kPromptNode) {
    if (n.parent < 0 || n.parent >= i) return Internal(at + "parent is not an older node");
    if (n.status == v1::NODE_STATUS_PROMPT) return Internal(at + "a second PROMPT node");
    if (n.position != nodes_[n.parent].position + 1) return Internal(at + "position skips");
    if (n.token_id < 0 || n.token_id >= vocab_size_) return Internal(at + "token outside vocab");
  }
  if (n.has_branch_score && !n.is_candidate) return Internal(at + "scored but not a candidate");
  if (n.branch_open) {
    ++tally.open_points;
    if (!n.is_branch_point) return Internal(at + "open but never a branch point");
    if (i != tail() && n.status != v1::NODE_STATUS_EXPLORED) {
      return Internal(at + "open branch neither at the tail nor in a rollout");
    }
  }
  return absl::OkStatus();
}

absl::Status SearchTree::CheckChildren(NodeId i, Tally& tally) const {
  // Linked both ways, each once, live ones with distinct tokens.
  const Node& n = nodes_[i];
  const std::string at = absl::StrCat("node ", i, ": ");
  NodeId last = kNoNode;
  std::vector<int32_t> live_tokens;
  for (NodeId c = n.first_child; c != kNoNode; c = nodes_[c].next_sibling) {
    if (c <= i || c >= size() || nodes_[c].parent != i || ++tally.child_links >= size()) {
      return Internal(absl::StrCat(at, "broken child link to ", c));
    }
    const v1::NodeStatus cs = nodes_[c].status;
    if (IsLive(cs)) live_tokens.push_back(nodes_[c].token_id);
    if ((n.status == v1::NODE_STATUS_PRUNED && cs != v1::NODE_STATUS_PRUNED) ||
        (n.status == v1::NODE_STATUS_BACKSPACED && IsLive(cs))) {
      return Internal(absl::StrCat(at, "dead node has live child ", c));
    }
    if (cs == v1::NODE_STATUS_EXPLORED && IsOnPath(n.status) && !(i == tail() && n.branch_open)) {
      return Internal(
          absl::StrCat(at, "committed node has explored child ", c, " without an open branch"));
    }
    last = c;
  }
  if (last != n.last_child) return Internal(at + "last_child is stale");
  std::sort(live_tokens.begin(), live_tokens.end());
  if (std::adjacent_find(live_tokens.begin(), live_tokens.end()) != live_tokens.end()) {
    return Internal(at + "two live children share a token");
  }
  return absl::OkStatus();
}

absl::Status SearchTree::CheckPlacement(NodeId i, Tally& tally) const {
  const Node& n = nodes_[i];
  const std::string at = absl::StrCat("node ", i, ": ");
  if (n.status == v1::NODE_STATUS_EXPLORED) {
    // Depth counts the candidates from here up to the committed path (nested branches).
    int32_t depth = 0;
    NodeId a = i;
    for (; nodes_[a].status == v1::NODE_STATUS_EXPLORED; a = nodes_[a].parent) {
      depth += nodes_[a].is_candidate ? 1 : 0;
    }
    if (!nodes_[a].branch_open || a != tail()) {
      return Internal(at + "explored node outside the open branch at the tail");
    }
    if (n.branch_depth != depth) {
      return Internal(
          absl::StrCat(at, "branch_depth ", n.branch_depth, " but ", depth, " candidates above"));
    }
  }
  if (n.status == v1::NODE_STATUS_BACKSPACED) {
    if (!WasBackspaced(n.position)) return Internal(at + "backspaced position not recorded");
    std::vector<bool>& seen = tally.backspaced_seen;
    if (seen.size() <= static_cast<size_t>(n.position)) {
      seen.resize(static_cast<size_t>(n.position) + 1, false);
    }
    if (seen[n.position]) return Internal(at + "position backspaced twice");
    seen[n.position] = true;
  }
  return absl::OkStatus();
}

absl::Status SearchTree::CheckTotals(const Tally& tally) const {
  if (tally.child_links != size() - 1) return Internal("some node is not its parent's child");
  if (tally.statuses != status_counts_) return Internal("status counters disagree with the nodes");
  if (tally.strategies != strategy_counts_) {
    return Internal("strategy counters disagree with the nodes");
  }
  if (std::count(backspaced_positions_.begin(), backspaced_positions_.end(), true) !=
      tally.statuses[v1::NODE_STATUS_BACKSPACED]) {
    return Internal("a backspaced position has no BACKSPACED node");
  }
  for (size_t k = 1; k < committed_path_.size(); ++k) {
    const Node& n = nodes_[committed_path_[k]];
    if (n.parent != committed_path_[k - 1] || !IsOnCommittedPath(n.id)) {
      return Internal(absl::StrCat("committed path breaks at node ", n.id));
    }
  }
  if (static_cast<size_t>(tally.statuses[v1::NODE_STATUS_COMMITTED] +
                          tally.statuses[v1::NODE_STATUS_INSERTED]) != committed_path_.size() - 1) {
    return Internal("a COMMITTED or INSERTED node is off the committed path");
  }
  if (tally.open_points != static_cast<int32_t>(open_branches_.size())) {
    return Internal("open branch list disagrees with the nodes");
  }
  return absl::OkStatus();
}

absl::Status SearchTree::CheckOpenBranchRecords() const {
  for (const OpenBranchRecord& r : open_branches_) {
    if (!Contains(r.point) || !nodes_[r.point].branch_open || r.candidate_count < 1 ||
        r.first_candidate <= r.point || r.first_candidate + r.candidate_count > size()) {
      return Internal(absl::StrCat("open branch at node ", r.point, " is malformed"));
    }
    for (NodeId c = r.first_candidate; c < r.first_candidate + r.candidate_count; ++c) {
      if (nodes_[c].parent != r.point || !nodes_[c].is_candidate) {
        return Internal(absl::StrCat("node ", c, " is not a candidate of node ", r.point));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace arbor::coordinator
