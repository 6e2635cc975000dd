// An open branch of a job and the strategy that decides it (docs/ARCHITECTURE.md §4.2, §4.5).
// The job opens a branch where a main-path step asks for one (Fork), hands the rollouts to the
// strategy its policy names, and from then on only relays: Send() when the branch may run,
// OnDone() with each Run's response, until the strategy answers with the rollout to commit.
// A strategy talks to the job only through BranchHost; adding one is a new file and a line in
// the planner that opens it (branch_planner.h):
//   ROLLOUT  rollout_search.h  every candidate rolled out in batched Runs, nested up to
//                              branch.max_depth, the best score wins;
//   BEAM     beam_search.h     width-B beam steps ranked by cumulative logprob;
//   TRACE    trace_search.h    greedy or sampled traces to their ends, the most confident
//                              answer wins (CoT-decoding, EAGer, DeepConf).
#ifndef ARBOR_COORDINATOR_JOB_BRANCH_STRATEGY_H_
#define ARBOR_COORDINATOR_JOB_BRANCH_STRATEGY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arbor/v1/worker.pb.h"
#include "coordinator/job/branch_host.h"
#include "coordinator/job/rollout.h"
#include "coordinator/tree/search_tree.h"

namespace arbor::coordinator {

// The decision on a branch: which leaf wins, and how the main path continues.
struct BranchCommit {
  NodeId winner_leaf = kNoNode;
  std::vector<float> scores;  // Per candidate, for the BranchResolved event.
  std::string reason;         // Why the winner won; empty when the scores say it.
  // The main path continues on `main_sequence`, after doing `source` to it first.
  uint64_t main_sequence = 0;
  SequenceSource source;
  arbor::v1::StopReason stop = arbor::v1::STOP_REASON_UNSPECIFIED;  // The winner's last Run's.
};

class BranchStrategy {
 public:
  // What the branch says after a Send or an OnDone: an error fails the job; a commit ends the
  // branch; nullopt after Send means a Run is on its way, after OnDone that the branch runs on.
  using Next = absl::StatusOr<std::optional<BranchCommit>>;

  BranchStrategy(NodeId point, std::vector<Rollout> rollouts)
      : point_(point), rollouts_(std::move(rollouts)) {}
  virtual ~BranchStrategy() = default;

  // Sends the branch's next Run through `host`, or commits when nothing is left to run.
  virtual Next Send(BranchHost& host) = 0;
  // The response to the Run the last Send sent (one result per item, in item order).
  virtual Next OnDone(BranchHost& host, const arbor::v1::RunResponse& response) = 0;

  NodeId point() const { return point_; }
  // Every sequence the branch's rollouts hold (or will hold) on the worker.
  std::vector<uint64_t> Sequences() const;
  // The worker no longer holds the branch's sequences: each rollout's next Run prefills its
  // whole path afresh.
  void Reprefill(const SearchTree& tree);

 protected:
  // Prompt, committed tokens, then the rollout tokens from below the branch point to `leaf`.
  std::vector<int32_t> PathTokens(const SearchTree& tree, NodeId leaf) const;

  const NodeId point_;
  std::vector<Rollout> rollouts_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_BRANCH_STRATEGY_H_
