#include "coordinator/job/branch_search.h"

#include "absl/status/status.h"
#include "coordinator/job/stored_distribution.h"
#include "entropix/decision.h"
#include "policy/policy_convert.h"

namespace arbor::coordinator {

absl::StatusOr<std::vector<entropix::SampledToken>> ChooseBranchCandidates(
    const arbor::v1::StepResult& structural_step, const entropix::PolicyConfig& policy, int width,
    entropix::RngKey key) {
  const StoredDistribution stored(structural_step);
  if (stored.empty()) {
    return absl::FailedPreconditionError("branch point without a top-K to choose from");
  }
  if (policy.mode == entropix::PolicyMode::kTrace && policy.trace.temperature == 0.0f) {
    return entropix::TopBranchCandidates(stored.candidates(), width, policy.ForkMinP());
  }
  return entropix::SelectBranchCandidates(stored.candidates(), SamplingOf(structural_step), width,
                                          policy.ForkMinP(), key.WithDraw(kBranchCandidateDraw));
}

void RolloutScore::Add(float logprob, const arbor::v1::Metrics& metrics, TokenCertainty certainty) {
  logprob_sum_ += logprob;
  certainties_.push_back(certainty);
  confidence_sum_ += entropix::ConfidenceTerm(policy::MetricsFromProto(metrics), weights_);
  ++tokens_;
}

void RolloutScore::Append(const RolloutScore& continuation) {
  logprob_sum_ += continuation.logprob_sum_;
  confidence_sum_ += continuation.confidence_sum_;
  tokens_ += continuation.tokens_;
  certainties_.insert(certainties_.end(), continuation.certainties_.begin(),
                      continuation.certainties_.end());
}

double RolloutScore::Score() const {
  if (tokens_ == 0) return 0.0;
  return (logprob_sum_ + confidence_sum_) / tokens_;
}

int BestIndex(absl::Span<const double> scores) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(scores.size()); ++i) {
    if (scores[i] > scores[best]) best = i;
  }
  return best;
}

}  // namespace arbor::coordinator
