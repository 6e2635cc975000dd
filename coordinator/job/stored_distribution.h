// The part of a step's next-token distribution a job keeps: the worker's top-K log-probs (at
// T = 1) and the sampling parameters the decision produced. Workers never send full logits, so
// the coordinator's own draws (BRANCH candidates, BACKSPACE re-draws) sample from this, with the
// one entropix sampler.
#ifndef ARBOR_COORDINATOR_JOB_STORED_DISTRIBUTION_H_
#define ARBOR_COORDINATOR_JOB_STORED_DISTRIBUTION_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "arbor/v1/worker.pb.h"
#include "coordinator/tree/search_tree.h"
#include "entropix/policy_config.h"
#include "entropix/sampler.h"

namespace arbor::coordinator {

// Draw indices of the coordinator's draws in the RNG key (seed, position, branch, draw). They sit
// far above the worker's ADAPTIVE sample indices (< 64), so no draw reuses a uniform.
inline constexpr uint32_t kBranchCandidateDraw = 1u << 16;
inline constexpr uint32_t kBackspaceRedrawDraw = 1u << 17;

class StoredDistribution {
 public:
  explicit StoredDistribution(absl::Span<const TokenAlternative> top_k);
  explicit StoredDistribution(const arbor::v1::StepResult& step);

  bool empty() const { return ids_.empty(); }
  // Valid while this object lives. Log-probs are already normalised: logsumexp 0.
  entropix::Candidates candidates() const { return {logprobs_, ids_, 0.0}; }

 private:
  std::vector<int32_t> ids_;
  std::vector<float> logprobs_;
};

// The adjusted parameters a worker reported with a step.
entropix::SamplingParams SamplingOf(const arbor::v1::StepResult& step);

// The step's top-K as the tree stores it.
std::vector<TokenAlternative> TopKOf(const arbor::v1::StepResult& step);

// A worker step as a tree node records it (computed on `sequence_id`).
Step TreeStep(const arbor::v1::StepResult& step, uint64_t sequence_id);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_STORED_DISTRIBUTION_H_
