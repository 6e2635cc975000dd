// The search tree of one generation job: every token the job computed, where it hangs, what the
// policy decided at the step that produced it and what became of it (committed, explored,
// pruned, backspaced, inserted). It is the record of what happened — ids are stable and nodes are
// never deleted — and the state a job driver reads to decide what to send to the worker next.
//
// Pure data structure: no I/O, no locks, no RPC. The owner (the job driver) serialises access.
//
// Shape. Node 0 holds the whole prompt (status PROMPT). The *committed path* runs from it through
// COMMITTED and INSERTED nodes to the *tail*. Structural operations hang off the tail:
//   - Commit / Insert append one node to the tail.
//   - Backspace marks the tail BACKSPACED and moves the tail back to its parent.
//   - OpenBranch gives a node one EXPLORED child per candidate; ExtendRollout grows a rollout one
//     token at a time (several children of one rollout node = BEAM forks); PruneRollout drops one
//     BEAM leaf mid-way; ResolveBranch commits the winner's rollout (or, for a branch nested inside
//     a rollout, keeps it EXPLORED) and prunes the rest.
// Every refusal is a FAILED_PRECONDITION (wrong state) or INVALID_ARGUMENT (bad value) naming the
// node and the rule, and leaves the tree unchanged.
#ifndef ARBOR_COORDINATOR_TREE_SEARCH_TREE_H_
#define ARBOR_COORDINATOR_TREE_SEARCH_TREE_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arbor/v1/entropix.pb.h"
#include "arbor/v1/generation.pb.h"

namespace arbor::coordinator {

using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;
inline constexpr NodeId kPromptNode = 0;

// One alternative token at a step (top-K at T = 1), stored compactly; text is added on export.
struct TokenAlternative {
  int32_t token_id = 0;
  float logprob = 0.0f;  // Natural log, <= 0.
};

// What one decoding step produced: the input of every operation that adds a node.
struct Step {
  int32_t token_id = 0;                              // [0, vocab).
  float logprob = 0.0f;                              // Of token_id at T = 1, natural log, <= 0.
  v1::Metrics metrics;                               // Of the step that produced the token.
  v1::Strategy strategy = v1::STRATEGY_UNSPECIFIED;  // Decision at that step; must be set.
  uint64_t sequence_id = 0;                          // Worker sequence that computed the token.
  std::vector<TokenAlternative> top_logprobs;        // Optional, best first.
  int32_t allowed_tokens = 0;  // Tokens an output constraint allowed at the step; 0: none.
};

// A node as stored. Children are an intrusive list of indices (first/last child, next sibling),
// so a linear path costs no allocation per node. Read through SearchTree; only it mutates.
struct Node {
  NodeId id = kNoNode;
  NodeId parent = kNoNode;
  NodeId first_child = kNoNode;
  NodeId last_child = kNoNode;
  NodeId next_sibling = kNoNode;
  int32_t token_id = -1;  // -1 for the prompt node.
  int32_t position = 0;   // Sequence position; the prompt node has that of its last token.
  float logprob = 0.0f;
  float branch_score = 0.0f;  // Meaningful when has_branch_score.
  v1::Strategy strategy = v1::STRATEGY_UNSPECIFIED;
  v1::NodeStatus status = v1::NODE_STATUS_UNSPECIFIED;
  int32_t branch_depth = 0;  // Candidates from it up to the committed path when it was made
                             // (1 for a branch, 2 nested, ...); kept once committed; 0 directly
                             // committed or inserted.
  uint64_t sequence_id = 0;
  uint32_t top_offset = 0;  // Into the tree's pool of alternatives.
  uint32_t top_count = 0;
  bool is_candidate = false;     // Created by OpenBranch.
  bool is_branch_point = false;  // OpenBranch was called on it.
  bool branch_open = false;      // ...and the branch is not resolved yet.
  bool has_branch_score = false;
  int32_t allowed_tokens = 0;  // As Step::allowed_tokens.
  v1::Metrics metrics;
};

// What ResolveBranch and PruneRollout changed, for the job's events and for the worker.
struct PruneResult {
  std::vector<NodeId> pruned_nodes;          // Newly PRUNED, ascending ids.
  std::vector<uint64_t> released_sequences;  // No longer used by any live node: Release them.
};

struct BranchResolution {
  NodeId winner_candidate = kNoNode;    // The candidate whose rollout won.
  std::vector<NodeId> candidates;       // The branch's candidates, in creation order.
  std::vector<NodeId> committed_nodes;  // Newly COMMITTED (empty for a nested branch).
  PruneResult pruned;
};

class SearchTree {
 public:
  // A tree holding `prompt_token_ids` (non-empty, each in [0, vocab_size)) computed on the
  // worker sequence `sequence_id`.
  static absl::StatusOr<SearchTree> Create(absl::Span<const int32_t> prompt_token_ids,
                                           int32_t vocab_size, uint64_t sequence_id);

  // --- committed path -------------------------------------------------------------------------
  // Appends a generated token to the tail (COMMITTED). Refused while a branch is open at the tail.
  absl::StatusOr<NodeId> Commit(const Step& step);
  // Appends a thinking token to the tail (INSERTED); it can never be backspaced.
  absl::StatusOr<NodeId> Insert(const Step& step);
  // Marks the tail BACKSPACED and makes its parent the tail; returns the removed node. Refused
  // for the prompt, inserted tokens, a tail with an open branch, and a position already
  // backspaced once.
  absl::StatusOr<NodeId> Backspace();

  // --- branches ----------------------------------------------------------------------------------
  // Opens a branch at `parent` (the tail, or a live rollout leaf for a nested branch) with one
  // EXPLORED child per candidate (>= 1, distinct tokens). Returns the children in order.
  absl::StatusOr<std::vector<NodeId>> OpenBranch(NodeId parent, absl::Span<const Step> candidates);
  // Appends the next rollout token below the live EXPLORED node `leaf`. A second child of the
  // same node is a BEAM fork; its token must differ from its live siblings'.
  absl::StatusOr<NodeId> ExtendRollout(NodeId leaf, const Step& step);
  // BEAM: drops the live leaf `leaf`, and each ancestor left without a live child, up to its
  // branch point. Refused when that would leave the branch point without any live rollout.
  absl::StatusOr<PruneResult> PruneRollout(NodeId leaf);
  // Resolves the open branch at `branch_point`: `winner_leaf` (a live leaf below it) wins. At
  // the tail, the path from the branch point to the winner becomes COMMITTED and the winner the
  // new tail; for a nested branch it stays EXPLORED and the outer rollout continues from it.
  // Every other live node below the branch point is PRUNED. `candidate_scores` is empty or has
  // one score per candidate, in creation order. Refused while a nested branch inside it is open.
  absl::StatusOr<BranchResolution> ResolveBranch(NodeId branch_point, NodeId winner_leaf,
                                                 absl::Span<const float> candidate_scores);
  // Gives up the open branch at the tail with no winner: every live node below it (nested
  // branches included) is PRUNED and the tail takes its next token as if it had never branched.
  // For a job whose worker cannot hold the branch (KV exhausted). winner_candidate is kNoNode and
  // nothing is committed.
  absl::StatusOr<BranchResolution> AbandonBranch(NodeId branch_point);
  // Annotates the branch candidate `id` with what the search judged of its rollout (TRACE: its
  // answer and confidence), shown by tree exports. INVALID_ARGUMENT for a non-candidate.
  absl::Status SetBranchNote(NodeId id, std::string note);

  // --- queries -----------------------------------------------------------------------------------
  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }
  int32_t vocab_size() const { return vocab_size_; }
  bool Contains(NodeId id) const { return id >= 0 && id < size(); }
  // `id` must be valid (Contains); an invalid id is a caller bug.
  const Node& node(NodeId id) const;
  std::vector<NodeId> Children(NodeId id) const;
  absl::Span<const TokenAlternative> TopLogprobs(NodeId id) const;
  // The note SetBranchNote left on `id`; empty when none.
  std::string_view branch_note(NodeId id) const;
  absl::Span<const int32_t> prompt_token_ids() const { return prompt_token_ids_; }

  // The committed path, prompt node first, tail last.
  absl::Span<const NodeId> committed_path() const { return committed_path_; }
  NodeId tail() const { return committed_path_.back(); }
  // Committed generated tokens (inserted ones included), prompt excluded.
  std::vector<int32_t> CommittedTokenIds() const;
  // Prompt followed by the committed generated tokens: what a new worker must prefill.
  std::vector<int32_t> SequenceTokenIds() const;
  // Position the next committed token takes.
  int32_t NextPosition() const { return node(tail()).position + 1; }
  // An open branch: its point and its candidates, which have consecutive ids.
  struct OpenBranchRecord {
    NodeId point = kNoNode;
    NodeId first_candidate = kNoNode;
    int32_t candidate_count = 0;
  };
  // Open branches, in the order they were opened.
  absl::Span<const OpenBranchRecord> open_branches() const { return open_branches_; }
  // The nearest open branch point at or above `id`, or kNoNode.
  NodeId OpenBranchOf(NodeId id) const;
  bool WasBackspaced(int32_t position) const;

  int32_t CountStatus(v1::NodeStatus status) const;
  int32_t CountStrategy(v1::Strategy strategy) const;
  // Tokens computed and thrown away: PRUNED plus BACKSPACED nodes (Usage.explored_tokens).
  int32_t ExploredTokenCount() const;
  int32_t GeneratedTokenCount() const { return static_cast<int32_t>(committed_path_.size()) - 1; }

  // Checks every structural invariant (links, positions, statuses, counters, the committed
  // path, open branches); OK or INTERNAL naming the first violation. O(size), for tests.
  absl::Status CheckInvariants() const;

 private:
  // Plants faults in a tree for the tests that show CheckInvariants rejecting each.
  friend class SearchTreeTestPeer;

  SearchTree() = default;

  static bool IsLive(v1::NodeStatus status);
  // PROMPT, COMMITTED or INSERTED: a status of the committed path.
  static bool IsOnPath(v1::NodeStatus status);
  // CheckInvariants' pieces (search_tree_invariants.cc): what one pass over the nodes counts,
  // node i's own fields, its child links, where an EXPLORED or BACKSPACED node may be, and the
  // totals, committed path and open-branch records against the counts.
  struct Tally;
  absl::Status CheckNode(NodeId i, Tally& tally) const;
  absl::Status CheckChildren(NodeId i, Tally& tally) const;
  absl::Status CheckPlacement(NodeId i, Tally& tally) const;
  absl::Status CheckTotals(const Tally& tally) const;
  absl::Status CheckOpenBranchRecords() const;
  bool IsOnCommittedPath(NodeId id) const;
  absl::Status ValidateStep(const Step& step, const char* what) const;
  NodeId AddNode(NodeId parent, const Step& step, v1::NodeStatus status, int32_t depth);
  absl::StatusOr<NodeId> AppendToTail(const Step& step, v1::NodeStatus status);
  void SetStatus(NodeId id, v1::NodeStatus status);
  bool HasLiveChild(NodeId id) const;
  bool HasLiveChildWithToken(NodeId id, int32_t token_id) const;
  // Sequence ids of `candidates` not used by the tail or any live node still in the tree.
  std::vector<uint64_t> UnusedSequences(std::vector<uint64_t> candidates) const;
  // ResolveBranch's preconditions: an open branch point, a live leaf of it as the winner, no
  // nested branch inside it still open.
  absl::Status CheckResolvable(NodeId branch_point, NodeId winner_leaf) const;
  // Prunes every live node below `branch_point` off `winner_path` (sorted: ids grow from root
  // to leaf), adding their sequences to `sequences`; returns them, sorted.
  std::vector<NodeId> PruneLosers(NodeId branch_point, const std::vector<NodeId>& winner_path,
                                  std::vector<uint64_t>& sequences);

  std::vector<Node> nodes_;
  std::vector<TokenAlternative> top_pool_;
  std::vector<int32_t> prompt_token_ids_;
  std::vector<NodeId> committed_path_;
  std::vector<OpenBranchRecord> open_branches_;
  std::vector<bool> backspaced_positions_;
  std::map<NodeId, std::string> branch_notes_;  // Few: one per judged candidate.
  std::array<int32_t, v1::NodeStatus_ARRAYSIZE> status_counts_{};
  std::array<int32_t, v1::Strategy_ARRAYSIZE> strategy_counts_{};
  int32_t vocab_size_ = 0;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_TREE_SEARCH_TREE_H_
