#include "coordinator/tree/search_tree.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace arbor::coordinator {
namespace {

// log_softmax in fp32 can return a hair above 0 for a token of probability ~1; anything beyond
// this is a caller bug rather than rounding.
constexpr float kLogprobTolerance = 1e-4f;

absl::Status CheckMetricsFinite(const v1::Metrics& m, const char* what) {
  const float values[] = {m.entropy(),
                          m.varentropy(),
                          m.attn_entropy(),
                          m.attn_varentropy(),
                          m.attn_head_varentropy(),
                          m.agreement(),
                          m.interaction_strength(),
                          m.logsumexp()};
  for (float v : values) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ".metrics: every value must be finite"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SearchTree> SearchTree::Create(absl::Span<const int32_t> prompt_token_ids,
                                              int32_t vocab_size, uint64_t sequence_id) {
  if (vocab_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("vocab_size must be > 0, got ", vocab_size));
  }
  if (prompt_token_ids.empty()) {
    return absl::InvalidArgumentError("prompt_token_ids must hold at least one token");
  }
  for (size_t i = 0; i < prompt_token_ids.size(); ++i) {
    if (prompt_token_ids[i] < 0 || prompt_token_ids[i] >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("prompt_token_ids[", i,
                                                     "] = ", prompt_token_ids[i],
                                                     " is outside [0, ", vocab_size, ")"));
    }
  }
  if (prompt_token_ids.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError("prompt_token_ids is too long for int32 positions");
  }
  SearchTree tree;
  tree.vocab_size_ = vocab_size;
  tree.prompt_token_ids_.assign(prompt_token_ids.begin(), prompt_token_ids.end());
  Node root;
  root.id = kPromptNode;
  root.position = static_cast<int32_t>(prompt_token_ids.size()) - 1;
  root.strategy = v1::STRATEGY_FORCED;
  root.status = v1::NODE_STATUS_PROMPT;
  root.sequence_id = sequence_id;
  tree.nodes_.push_back(root);
  tree.status_counts_[v1::NODE_STATUS_PROMPT] = 1;
  tree.strategy_counts_[v1::STRATEGY_FORCED] = 1;
  tree.committed_path_.push_back(kPromptNode);
  return tree;
}

const Node& SearchTree::node(NodeId id) const {
  if (!Contains(id)) std::abort();  // A caller bug: ids come from this tree.
  return nodes_[id];
}

std::vector<NodeId> SearchTree::Children(NodeId id) const {
  std::vector<NodeId> children;
  for (NodeId c = node(id).first_child; c != kNoNode; c = nodes_[c].next_sibling) {
    children.push_back(c);
  }
  return children;
}

absl::Span<const TokenAlternative> SearchTree::TopLogprobs(NodeId id) const {
  const Node& n = node(id);
  return absl::MakeConstSpan(top_pool_).subspan(n.top_offset, n.top_count);
}

std::vector<int32_t> SearchTree::CommittedTokenIds() const {
  std::vector<int32_t> ids;
  ids.reserve(committed_path_.size() - 1);
  for (size_t i = 1; i < committed_path_.size(); ++i) {
    ids.push_back(nodes_[committed_path_[i]].token_id);
  }
  return ids;
}

std::vector<int32_t> SearchTree::SequenceTokenIds() const {
  std::vector<int32_t> ids = prompt_token_ids_;
  std::vector<int32_t> generated = CommittedTokenIds();
  ids.insert(ids.end(), generated.begin(), generated.end());
  return ids;
}

NodeId SearchTree::OpenBranchOf(NodeId id) const {
  for (NodeId n = id; n != kNoNode; n = nodes_[n].parent) {
    if (nodes_[n].branch_open) return n;
    if (nodes_[n].status != v1::NODE_STATUS_EXPLORED) return kNoNode;
  }
  return kNoNode;
}

bool SearchTree::WasBackspaced(int32_t position) const {
  return position >= 0 && static_cast<size_t>(position) < backspaced_positions_.size() &&
         backspaced_positions_[position];
}

int32_t SearchTree::CountStatus(v1::NodeStatus status) const {
  return v1::NodeStatus_IsValid(status) ? status_counts_[status] : 0;
}

int32_t SearchTree::CountStrategy(v1::Strategy strategy) const {
  return v1::Strategy_IsValid(strategy) ? strategy_counts_[strategy] : 0;
}

int32_t SearchTree::ExploredTokenCount() const {
  return status_counts_[v1::NODE_STATUS_PRUNED] + status_counts_[v1::NODE_STATUS_BACKSPACED];
}

bool SearchTree::IsOnPath(v1::NodeStatus status) {
  return status == v1::NODE_STATUS_PROMPT || status == v1::NODE_STATUS_COMMITTED ||
         status == v1::NODE_STATUS_INSERTED;
}

bool SearchTree::IsLive(v1::NodeStatus status) {
  return status != v1::NODE_STATUS_PRUNED && status != v1::NODE_STATUS_BACKSPACED;
}

bool SearchTree::IsOnCommittedPath(NodeId id) const {
  const Node& n = nodes_[id];
  if (!IsOnPath(n.status)) return false;
  const size_t index = static_cast<size_t>(n.position - nodes_[kPromptNode].position);
  return index < committed_path_.size() && committed_path_[index] == id;
}

absl::Status SearchTree::ValidateStep(const Step& step, const char* what) const {
  if (step.token_id < 0 || step.token_id >= vocab_size_) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ".token_id = ", step.token_id, " is outside [0, ", vocab_size_, ")"));
  }
  if (!std::isfinite(step.logprob) || step.logprob > kLogprobTolerance) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ".logprob = ", step.logprob, " must be finite and <= 0"));
  }
  if (!v1::Strategy_IsValid(step.strategy) || step.strategy == v1::STRATEGY_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ".strategy = ", static_cast<int>(step.strategy), " is not a strategy"));
  }
  RETURN_IF_ERROR(CheckMetricsFinite(step.metrics, what));
  for (size_t i = 0; i < step.top_logprobs.size(); ++i) {
    const TokenAlternative& alt = step.top_logprobs[i];
    if (alt.token_id < 0 || alt.token_id >= vocab_size_ || !std::isfinite(alt.logprob) ||
        alt.logprob > kLogprobTolerance) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ".top_logprobs[", i, "] = (", alt.token_id, ", ", alt.logprob,
                       "): token must be in [0, ", vocab_size_, ") and logprob finite and <= 0"));
    }
  }
  if (nodes_.size() >= static_cast<size_t>(std::numeric_limits<NodeId>::max()) ||
      top_pool_.size() + step.top_logprobs.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::ResourceExhaustedError("search tree is full (node ids are int32)");
  }
  return absl::OkStatus();
}

NodeId SearchTree::AddNode(NodeId parent, const Step& step, v1::NodeStatus status, int32_t depth) {
  const NodeId id = static_cast<NodeId>(nodes_.size());
  Node n;
  n.id = id;
  n.parent = parent;
  n.token_id = step.token_id;
  n.position = nodes_[parent].position + 1;
  n.logprob = step.logprob;
  n.strategy = step.strategy;
  n.allowed_tokens = step.allowed_tokens;
  n.status = status;
  n.branch_depth = depth;
  n.sequence_id = step.sequence_id;
  n.top_offset = static_cast<uint32_t>(top_pool_.size());
  n.top_count = static_cast<uint32_t>(step.top_logprobs.size());
  n.metrics = step.metrics;
  top_pool_.insert(top_pool_.end(), step.top_logprobs.begin(), step.top_logprobs.end());
  nodes_.push_back(std::move(n));
  Node& p = nodes_[parent];
  if (p.last_child == kNoNode) {
    p.first_child = id;
  } else {
    nodes_[p.last_child].next_sibling = id;
  }
  p.last_child = id;
  ++status_counts_[status];
  ++strategy_counts_[step.strategy];
  return id;
}

void SearchTree::SetStatus(NodeId id, v1::NodeStatus status) {
  --status_counts_[nodes_[id].status];
  nodes_[id].status = status;
  ++status_counts_[status];
}

bool SearchTree::HasLiveChild(NodeId id) const {
  for (NodeId c = nodes_[id].first_child; c != kNoNode; c = nodes_[c].next_sibling) {
    if (IsLive(nodes_[c].status)) return true;
  }
  return false;
}

bool SearchTree::HasLiveChildWithToken(NodeId id, int32_t token_id) const {
  for (NodeId c = nodes_[id].first_child; c != kNoNode; c = nodes_[c].next_sibling) {
    if (IsLive(nodes_[c].status) && nodes_[c].token_id == token_id) return true;
  }
  return false;
}

absl::StatusOr<NodeId> SearchTree::AppendToTail(const Step& step, v1::NodeStatus status) {
  const char* what = status == v1::NODE_STATUS_INSERTED ? "insert" : "commit";
  RETURN_IF_ERROR(ValidateStep(step, what));
  const NodeId t = tail();
  if (nodes_[t].branch_open) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": a branch is open at tail node ", t, "; resolve it before appending"));
  }
  const NodeId id = AddNode(t, step, status, /*depth=*/0);
  committed_path_.push_back(id);
  return id;
}

absl::StatusOr<NodeId> SearchTree::Commit(const Step& step) {
  return AppendToTail(step, v1::NODE_STATUS_COMMITTED);
}

absl::StatusOr<NodeId> SearchTree::Insert(const Step& step) {
  return AppendToTail(step, v1::NODE_STATUS_INSERTED);
}

absl::StatusOr<NodeId> SearchTree::Backspace() {
  const NodeId t = tail();
  const Node& n = nodes_[t];
  if (n.status == v1::NODE_STATUS_PROMPT) {
    return absl::FailedPreconditionError("backspace: nothing generated to remove (tail is prompt)");
  }
  if (n.status == v1::NODE_STATUS_INSERTED) {
    return absl::FailedPreconditionError(
        absl::StrCat("backspace: tail node ", t,
                     " is an inserted token; only generated tokens "
                     "can be removed"));
  }
  if (n.branch_open) {
    return absl::FailedPreconditionError(
        absl::StrCat("backspace: a branch is open at tail node ", t));
  }
  if (WasBackspaced(n.position)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "backspace: position ", n.position, " was already backspaced once (node ", t, ")"));
  }
  if (backspaced_positions_.size() <= static_cast<size_t>(n.position)) {
    backspaced_positions_.resize(static_cast<size_t>(n.position) + 1, false);
  }
  backspaced_positions_[n.position] = true;
  SetStatus(t, v1::NODE_STATUS_BACKSPACED);
  committed_path_.pop_back();
  return t;
}

absl::StatusOr<std::vector<NodeId>> SearchTree::OpenBranch(NodeId parent,
                                                           absl::Span<const Step> candidates) {
  if (!Contains(parent)) {
    return absl::InvalidArgumentError(absl::StrCat("open_branch: no node ", parent));
  }
  if (candidates.empty()) {
    return absl::InvalidArgumentError("open_branch: candidates must hold at least one step");
  }
  const Node& p = nodes_[parent];
  const bool at_tail = parent == tail();
  if (!at_tail && p.status != v1::NODE_STATUS_EXPLORED) {
    return absl::FailedPreconditionError(
        absl::StrCat("open_branch: node ", parent, " is neither the tail nor a live rollout node"));
  }
  if (p.branch_open) {
    return absl::FailedPreconditionError(
        absl::StrCat("open_branch: a branch is already open at node ", parent));
  }
  if (!at_tail && HasLiveChild(parent)) {
    return absl::FailedPreconditionError(
        absl::StrCat("open_branch: rollout node ", parent, " is not a leaf"));
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    RETURN_IF_ERROR(ValidateStep(candidates[i], "open_branch.candidate"));
    for (size_t j = 0; j < i; ++j) {
      if (candidates[j].token_id == candidates[i].token_id) {
        return absl::InvalidArgumentError(absl::StrCat("open_branch: candidates ", j, " and ", i,
                                                       " share token ", candidates[i].token_id));
      }
    }
    if (HasLiveChildWithToken(parent, candidates[i].token_id)) {
      return absl::FailedPreconditionError(absl::StrCat("open_branch: node ", parent,
                                                        " already has a live child with token ",
                                                        candidates[i].token_id));
    }
  }
  const int32_t depth = (at_tail ? 0 : p.branch_depth) + 1;
  nodes_[parent].is_branch_point = true;
  nodes_[parent].branch_open = true;
  open_branches_.push_back(
      {parent, static_cast<NodeId>(nodes_.size()), static_cast<int32_t>(candidates.size())});
  std::vector<NodeId> children;
  children.reserve(candidates.size());
  for (const Step& step : candidates) {
    const NodeId id = AddNode(parent, step, v1::NODE_STATUS_EXPLORED, depth);
    nodes_[id].is_candidate = true;
    children.push_back(id);
  }
  return children;
}

absl::StatusOr<NodeId> SearchTree::ExtendRollout(NodeId leaf, const Step& step) {
  if (!Contains(leaf)) return absl::InvalidArgumentError(absl::StrCat("extend: no node ", leaf));
  RETURN_IF_ERROR(ValidateStep(step, "extend"));
  const Node& n = nodes_[leaf];
  if (n.status != v1::NODE_STATUS_EXPLORED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "extend: node ", leaf, " is ", v1::NodeStatus_Name(n.status), ", not a live rollout"));
  }
  if (n.branch_open) {
    return absl::FailedPreconditionError(
        absl::StrCat("extend: node ", leaf, " is an open branch point; extend its candidates"));
  }
  if (HasLiveChildWithToken(leaf, step.token_id)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "extend: node ", leaf, " already has a live child with token ", step.token_id));
  }
  return AddNode(leaf, step, v1::NODE_STATUS_EXPLORED, n.branch_depth);
}

absl::StatusOr<PruneResult> SearchTree::PruneRollout(NodeId leaf) {
  if (!Contains(leaf)) return absl::InvalidArgumentError(absl::StrCat("prune: no node ", leaf));
  const Node& n = nodes_[leaf];
  if (n.status != v1::NODE_STATUS_EXPLORED || n.branch_open || HasLiveChild(leaf)) {
    return absl::FailedPreconditionError(
        absl::StrCat("prune: node ", leaf, " is not a live rollout leaf"));
  }
  const NodeId branch_point = OpenBranchOf(leaf);
  // Walk up while the node would be left without a live child, stopping below the branch point.
  std::vector<NodeId> to_prune = {leaf};
  NodeId child = leaf;
  for (NodeId p = n.parent; p != branch_point; child = p, p = nodes_[p].parent) {
    bool other_live = false;
    for (NodeId c = nodes_[p].first_child; c != kNoNode; c = nodes_[c].next_sibling) {
      if (c != child && IsLive(nodes_[c].status)) other_live = true;
    }
    if (other_live) break;
    to_prune.push_back(p);
  }
  if (nodes_[to_prune.back()].parent == branch_point) {
    bool other_live = false;
    for (NodeId c = nodes_[branch_point].first_child; c != kNoNode; c = nodes_[c].next_sibling) {
      if (c != to_prune.back() && IsLive(nodes_[c].status)) other_live = true;
    }
    if (!other_live) {
      return absl::FailedPreconditionError(
          absl::StrCat("prune: node ", leaf, " holds the last live rollout of branch point ",
                       branch_point, "; resolve the branch instead"));
    }
  }
  PruneResult result;
  std::vector<uint64_t> sequences;
  for (NodeId id : to_prune) {
    SetStatus(id, v1::NODE_STATUS_PRUNED);
    sequences.push_back(nodes_[id].sequence_id);
  }
  std::sort(to_prune.begin(), to_prune.end());
  result.pruned_nodes = std::move(to_prune);
  result.released_sequences = UnusedSequences(std::move(sequences));
  return result;
}

absl::Status SearchTree::CheckResolvable(NodeId branch_point, NodeId winner_leaf) const {
  if (!Contains(branch_point) || !nodes_[branch_point].branch_open) {
    return absl::FailedPreconditionError(
        absl::StrCat("resolve: node ", branch_point, " is not an open branch point"));
  }
  if (!Contains(winner_leaf) || nodes_[winner_leaf].status != v1::NODE_STATUS_EXPLORED ||
      nodes_[winner_leaf].branch_open || HasLiveChild(winner_leaf) ||
      OpenBranchOf(winner_leaf) != branch_point) {
    return absl::InvalidArgumentError(absl::StrCat("resolve: winner node ", winner_leaf,
                                                   " is not a live rollout leaf of branch point ",
                                                   branch_point));
  }
  for (const OpenBranchRecord& r : open_branches_) {
    const NodeId open = r.point;
    if (open != branch_point && nodes_[open].status == v1::NODE_STATUS_EXPLORED && [&] {
          for (NodeId a = nodes_[open].parent; a != kNoNode; a = nodes_[a].parent) {
            if (a == branch_point) return true;
            if (nodes_[a].status != v1::NODE_STATUS_EXPLORED) return false;
          }
          return false;
        }()) {
      return absl::FailedPreconditionError(absl::StrCat("resolve: nested branch at node ", open,
                                                        " inside branch point ", branch_point,
                                                        " is still open; resolve it first"));
    }
  }
  return absl::OkStatus();
}

std::vector<NodeId> SearchTree::PruneLosers(NodeId branch_point,
                                            const std::vector<NodeId>& winner_path,
                                            std::vector<uint64_t>& sequences) {
  // Ids increase from root to leaf (a child is created after its parent): winner_path is sorted.
  auto is_winner = [&](NodeId id) {
    return std::binary_search(winner_path.begin(), winner_path.end(), id);
  };
  std::vector<NodeId> pruned;
  std::vector<NodeId> stack = {branch_point};
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    for (NodeId c = nodes_[id].first_child; c != kNoNode; c = nodes_[c].next_sibling) {
      if (nodes_[c].status != v1::NODE_STATUS_EXPLORED) continue;
      if (is_winner(c)) {
        stack.push_back(c);
        continue;
      }
      // A losing subtree: everything live in it goes.
      std::vector<NodeId> losing = {c};
      while (!losing.empty()) {
        const NodeId l = losing.back();
        losing.pop_back();
        SetStatus(l, v1::NODE_STATUS_PRUNED);
        pruned.push_back(l);
        sequences.push_back(nodes_[l].sequence_id);
        for (NodeId g = nodes_[l].first_child; g != kNoNode; g = nodes_[g].next_sibling) {
          if (nodes_[g].status == v1::NODE_STATUS_EXPLORED) losing.push_back(g);
        }
      }
    }
  }
  std::sort(pruned.begin(), pruned.end());
  return pruned;
}

absl::StatusOr<BranchResolution> SearchTree::ResolveBranch(
    NodeId branch_point, NodeId winner_leaf, absl::Span<const float> candidate_scores) {
  RETURN_IF_ERROR(CheckResolvable(branch_point, winner_leaf));
  const auto record =
      std::find_if(open_branches_.begin(), open_branches_.end(),
                   [&](const OpenBranchRecord& r) { return r.point == branch_point; });
  BranchResolution resolution;
  for (int32_t i = 0; i < record->candidate_count; ++i) {
    resolution.candidates.push_back(record->first_candidate + i);
  }
  if (!candidate_scores.empty() && candidate_scores.size() != resolution.candidates.size()) {
    return absl::InvalidArgumentError(absl::StrCat("resolve: candidate_scores has ",
                                                   candidate_scores.size(), " scores for ",
                                                   resolution.candidates.size(), " candidates"));
  }
  for (float s : candidate_scores) {
    if (!std::isfinite(s)) {
      return absl::InvalidArgumentError("resolve: candidate_scores must be finite");
    }
  }

  // The winner's path, branch point excluded, root-most first.
  std::vector<NodeId> winner_path;
  for (NodeId a = winner_leaf; a != branch_point; a = nodes_[a].parent) winner_path.push_back(a);
  std::reverse(winner_path.begin(), winner_path.end());
  resolution.winner_candidate = winner_path.front();

  for (size_t i = 0; i < candidate_scores.size(); ++i) {
    nodes_[resolution.candidates[i]].branch_score = candidate_scores[i];
    nodes_[resolution.candidates[i]].has_branch_score = true;
  }
  std::vector<uint64_t> sequences;
  resolution.pruned.pruned_nodes = PruneLosers(branch_point, winner_path, sequences);

  nodes_[branch_point].branch_open = false;
  open_branches_.erase(record);
  if (branch_point == tail()) {
    for (NodeId id : winner_path) {
      SetStatus(id, v1::NODE_STATUS_COMMITTED);
      committed_path_.push_back(id);
    }
    resolution.committed_nodes = winner_path;
  }
  // The branch point's sequence was forked for the candidates; the job (or the outer rollout)
  // now lives on the winner's, so the old one goes too unless a live leaf still uses it.
  sequences.push_back(nodes_[branch_point].sequence_id);
  resolution.pruned.released_sequences = UnusedSequences(std::move(sequences));
  return resolution;
}

absl::StatusOr<BranchResolution> SearchTree::AbandonBranch(NodeId branch_point) {
  if (branch_point != tail() || !nodes_[branch_point].branch_open) {
    return absl::FailedPreconditionError(
        absl::StrCat("abandon: node ", branch_point, " is not the open branch at the tail"));
  }
  const auto record =
      std::find_if(open_branches_.begin(), open_branches_.end(),
                   [&](const OpenBranchRecord& r) { return r.point == branch_point; });
  BranchResolution resolution;
  for (int32_t i = 0; i < record->candidate_count; ++i) {
    resolution.candidates.push_back(record->first_candidate + i);
  }
  std::vector<uint64_t> sequences;
  resolution.pruned.pruned_nodes = PruneLosers(branch_point, /*winner_path=*/{}, sequences);
  // Every other open branch lay inside this one (it is at the tail): all are closed now.
  for (const OpenBranchRecord& r : open_branches_) nodes_[r.point].branch_open = false;
  open_branches_.clear();
  resolution.pruned.released_sequences = UnusedSequences(std::move(sequences));
  return resolution;
}

std::vector<uint64_t> SearchTree::UnusedSequences(std::vector<uint64_t> candidates) const {
  std::vector<uint64_t> live = {nodes_[tail()].sequence_id};
  for (const OpenBranchRecord& r : open_branches_) {
    const NodeId open = r.point;
    std::vector<NodeId> stack = {open};
    while (!stack.empty()) {
      const NodeId id = stack.back();
      stack.pop_back();
      bool leaf = true;
      for (NodeId c = nodes_[id].first_child; c != kNoNode; c = nodes_[c].next_sibling) {
        if (nodes_[c].status == v1::NODE_STATUS_EXPLORED) {
          stack.push_back(c);
          leaf = false;
        }
      }
      if (leaf && id != open) live.push_back(nodes_[id].sequence_id);
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::sort(live.begin(), live.end());
  std::vector<uint64_t> unused;
  std::set_difference(candidates.begin(), candidates.end(), live.begin(), live.end(),
                      std::back_inserter(unused));
  return unused;
}

absl::Status SearchTree::SetBranchNote(NodeId id, std::string note) {
  if (!Contains(id) || !nodes_[id].is_candidate) {
    return absl::InvalidArgumentError(
        absl::StrCat("note: node ", id, " is not a branch candidate"));
  }
  branch_notes_[id] = std::move(note);
  return absl::OkStatus();
}

std::string_view SearchTree::branch_note(NodeId id) const {
  const auto it = branch_notes_.find(id);
  return it == branch_notes_.end() ? std::string_view() : std::string_view(it->second);
}

}  // namespace arbor::coordinator
