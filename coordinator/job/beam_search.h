// BEAM mode of BRANCH (docs/ARCHITECTURE.md §4.2): width B over all children of a branch point,
// ranked by cumulative logprob at every step. Each beam step is one batched Run with max_steps = 1
// for all live beams; the worker's top-K of that step gives each beam's expansions; the best B of
// all expansions (and of the beams already finished) survive; a beam kept with several tokens
// forks. SelectBeams and IsCalm are the arithmetic, free of RPC and tree state; BeamSearch is the
// strategy that drives the steps (branch_strategy.h).
#ifndef ARBOR_COORDINATOR_JOB_BEAM_SEARCH_H_
#define ARBOR_COORDINATOR_JOB_BEAM_SEARCH_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arbor/v1/entropix.pb.h"
#include "arbor/v1/worker.pb.h"
#include "coordinator/job/branch_host.h"
#include "coordinator/job/branch_strategy.h"
#include "coordinator/job/rollout.h"
#include "coordinator/tree/search_tree.h"
#include "entropix/policy_config.h"

namespace arbor::coordinator {

struct BeamHypothesis {
  double cumulative_logprob = 0.0;
  // A live beam's next-token top-K (best first); empty for a finished beam, which competes as
  // it is.
  std::vector<TokenAlternative> next;
};

struct BeamPick {
  int hypothesis = 0;
  int32_t token_id = -1;  // -1: the finished hypothesis is kept as it is.
  float logprob = 0.0f;   // Of token_id.
  double cumulative_logprob = 0.0;
};

// The best `width` (>= 1) of: every finished hypothesis, and every live one extended by each of
// its next tokens; by cumulative logprob, ties to the earlier hypothesis, then to the better
// token, so the selection is deterministic. Best first.
std::vector<BeamPick> SelectBeams(absl::Span<const BeamHypothesis> hypotheses, int width);

// Whether the step that produced a token was back within bounds (H and V below the calm
// thresholds).
bool IsCalm(const arbor::v1::Metrics& metrics, const entropix::BranchOptions& branch);

// The beams start as the branch's candidates, one rollout each. Beams never nest
// (branch.max_depth > 1 applies to ROLLOUT): every beam step re-ranks all of them, so a nested
// branch would have to join the ranking of its outer one.
class BeamSearch : public BranchStrategy {
 public:
  BeamSearch(NodeId point, std::vector<Rollout> beams);

  // One step for every beam not done; the commit once all are.
  Next Send(BranchHost& host) override;
  // The step's ranking: the surviving beams extend, fork or end; the others are dropped.
  Next OnDone(BranchHost& host, const arbor::v1::RunResponse& response) override;

 private:
  // The step each beam took (null for one that took none), marking beams done or sent.
  std::vector<const arbor::v1::StepResult*> TakeSteps(BranchHost& host,
                                                      const arbor::v1::RunResponse& response);
  // The beam `pick` makes of its parent: its own sequence continued (`owns_sequence`) or
  // forked, the token added to the tree and the score.
  absl::StatusOr<Rollout> Extend(BranchHost& host, const BeamPick& pick,
                                 const std::vector<const arbor::v1::StepResult*>& steps,
                                 bool owns_sequence) const;
  BranchCommit Resolve() const;

  std::vector<double> candidate_scores_;  // Per candidate, its best beam's latest score.
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_BEAM_SEARCH_H_
