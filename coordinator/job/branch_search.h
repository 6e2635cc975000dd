// BRANCH arithmetic of docs/ARCHITECTURE.md §4.2, free of RPC and tree state: which candidates a
// branch point opens (drawn from the LEHV-adjusted stored distribution) and how a finished rollout
// is scored (mean logprob + the entropix confidence term averaged over its steps).
#ifndef ARBOR_COORDINATOR_JOB_BRANCH_SEARCH_H_
#define ARBOR_COORDINATOR_JOB_BRANCH_SEARCH_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arbor/v1/worker.pb.h"
#include "coordinator/job/trace_choice.h"
#include "entropix/policy_config.h"
#include "entropix/rng.h"
#include "entropix/sampler.h"

namespace arbor::coordinator {

// Up to `width` distinct candidates from `structural_step`'s top-K: drawn with the LEHV
// parameters it carries, `key` addressing the branch point (draws kBranchCandidateDraw, +1, ...);
// in greedy TRACE mode the most likely ones, nothing drawn (sampled TRACE draws like BRANCH, at
// the trace temperature the step carries). FailedPrecondition when the step has no
// top-K or nothing qualifies.
absl::StatusOr<std::vector<entropix::SampledToken>> ChooseBranchCandidates(
    const arbor::v1::StepResult& structural_step, const entropix::PolicyConfig& policy, int width,
    entropix::RngKey key);

// A rollout's running score: every token it holds (the candidate first) adds its logprob and
// the confidence term of the step that produced it. It also keeps each token's certainty
// (trace_choice.h), which TRACE mode judges answers by.
class RolloutScore {
 public:
  explicit RolloutScore(const entropix::AdaptiveOptions& weights) : weights_(weights) {}
  void Add(float logprob, const arbor::v1::Metrics& metrics, TokenCertainty certainty);
  // Adds every token of `continuation` (a nested branch's winning rollout).
  void Append(const RolloutScore& continuation);
  int tokens() const { return tokens_; }
  double cumulative_logprob() const { return logprob_sum_; }
  const std::vector<TokenCertainty>& certainties() const { return certainties_; }
  // mean logprob + mean confidence; 0 for an empty rollout.
  double Score() const;

 private:
  entropix::AdaptiveOptions weights_;
  double logprob_sum_ = 0.0;
  double confidence_sum_ = 0.0;
  int tokens_ = 0;
  std::vector<TokenCertainty> certainties_;
};

// Index of the best score, the earliest on ties (deterministic). `scores` must be non-empty.
int BestIndex(absl::Span<const double> scores);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_BRANCH_SEARCH_H_
