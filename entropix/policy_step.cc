#include "entropix/policy_step.h"

#include "base/status_macros.h"

namespace arbor::entropix {

absl::StatusOr<StepOutcome> PolicyStep(const Candidates& candidates,
                                       const LogitMetrics& logit_metrics,
                                       const AttentionMetrics& attention,
                                       const PolicyConfig& config, const DecisionContext& context,
                                       const RngKey& key, const StepOptions& options) {
  StepOutcome outcome;
  outcome.metrics = CombineMetrics(logit_metrics, attention);
  outcome.decision = Decide(outcome.metrics, config, context);
  Decision& decision = outcome.decision;
  if (IsStructural(decision.strategy)) {
    if (options.stop_on_structural) return outcome;
    decision.strategy = decision.fallback;
  }
  switch (decision.strategy) {
    case Strategy::kArgmax: {
      ASSIGN_OR_RETURN(outcome.token, Argmax(candidates, options.banned));
      break;
    }
    case Strategy::kAdaptive: {
      ASSIGN_OR_RETURN(
          const AdaptiveSample best,
          SampleAdaptive(candidates, decision.sampling, decision.n_samples,
                         ConfidenceTerm(outcome.metrics, config.adaptive), key, options.banned));
      outcome.token = best.token;
      break;
    }
    default: {  // HOT_SAMPLE, BRANCH_SAMPLE, RESAMPLE: one draw with the row's parameters.
      ASSIGN_OR_RETURN(outcome.token, Sample(candidates, decision.sampling, key, options.banned));
      break;
    }
  }
  return outcome;
}

}  // namespace arbor::entropix
