// ROLLOUT mode of BRANCH (docs/ARCHITECTURE.md §4.2), with nesting up to branch.max_depth.
//
// Every rollout with work left, whatever its depth, runs in one batched Run per round. A rollout
// at depth d may branch again iff d < branch.max_depth: its Run then stops on structural
// decisions, and a BRANCH opens a nested branch at its leaf (its candidates are forked from its
// sequence in the next batched Run) with what is left of its length budget. INSERT and BACKSPACE
// stay fallback samples inside rollouts: they are structural edits of a path the job has not
// committed (and may prune), so the rollout's next Run takes that one position with structural
// stops off. A nested branch is resolved once all its rollouts are done: the best continues as
// the rollout it is nested in (which is then done too: its winner ended calm, on a stop token,
// or on the budget they share), the others are pruned and released. The branch commits when all
// its rollouts are done, hence after every nested branch inside it; the best score wins.
#ifndef ARBOR_COORDINATOR_JOB_ROLLOUT_SEARCH_H_
#define ARBOR_COORDINATOR_JOB_ROLLOUT_SEARCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "arbor/v1/worker.pb.h"
#include "coordinator/job/branch_host.h"
#include "coordinator/job/branch_strategy.h"
#include "coordinator/job/rollout.h"
#include "entropix/policy_config.h"

namespace arbor::coordinator {

class RolloutSearch : public BranchStrategy {
 public:
  RolloutSearch(NodeId point, std::vector<Rollout> rollouts);

  Next Send(BranchHost& host) override;
  Next OnDone(BranchHost& host, const arbor::v1::RunResponse& response) override;

 protected:
  // Candidates a fork that replaces `replaced` rollouts (a rollout forking replaces itself) may
  // open: the policy's fork width.
  virtual int ForkWidth(const entropix::PolicyConfig& policy, int32_t replaced) const;
  // After a round's results are recorded: resolves what is decided; a commit once the branch is.
  virtual Next Resolve(BranchHost& host);
  // Steps `rollout`'s next Run may take of the `left` its length budget allows: all of them
  // here.
  virtual int32_t StepLimit(const Rollout& rollout, int32_t left) const { return left; }
  // Adds an early stop of its own to `rollout`'s next item; none here.
  virtual void AddEarlyStop(const Rollout& rollout, arbor::v1::RunItem& item) const {}
  // Resolves the nested branch open at `parent`'s leaf with parent.nested[winner] winning: the
  // tree, releases, the event; the winner continues as `parent`, which is then done.
  absl::Status AdoptNestedWinner(BranchHost& host, Rollout& parent, int winner,
                                 const std::vector<float>& scores, const std::string& reason);
  // Rollouts without a nested branch open: the ends the branch's paths run to (TRACE's traces).
  int32_t leaves() const { return leaves_; }

 private:
  // The rollouts Send() sends, in item order.
  std::vector<Rollout*> Pending();
  // Records one rollout's Run; opens its nested branch when it stopped on one.
  absl::Status Record(BranchHost& host, Rollout& rollout, const arbor::v1::RunResult& result);
  // Resolves every nested branch below `rollout` whose rollouts are all done, deepest first.
  absl::Status ResolveNested(BranchHost& host, Rollout& rollout);

  int32_t leaves_ = 0;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_ROLLOUT_SEARCH_H_
