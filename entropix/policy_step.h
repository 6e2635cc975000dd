// The local policy of one decode step, as the worker runs it after every forward pass: decide
// from the metrics, then take the token the decision asks for (argmax, adaptive best-of-n or a
// row's adjusted sample) — or stop without a token when the decision is structural and the
// caller returns those to the coordinator. The coordinator reaches the same result with Decide
// and the sampler, so a step means the same thing wherever it is computed.
#ifndef ARBOR_ENTROPIX_POLICY_STEP_H_
#define ARBOR_ENTROPIX_POLICY_STEP_H_

#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "entropix/decision.h"
#include "entropix/metrics.h"
#include "entropix/rng.h"
#include "entropix/sampler.h"

namespace arbor::entropix {

struct StepOptions {
  absl::Span<const int32_t> banned;  // Tokens banned at this position (BACKSPACE history).
  // True: a structural decision returns no token. False: it is replaced by its row's sample
  // (decision.strategy becomes decision.fallback).
  bool stop_on_structural = true;
};

struct StepOutcome {
  Decision decision;
  Metrics metrics;
  std::optional<SampledToken> token;  // Empty exactly when stopped on a structural decision.
};

// `candidates` are the whole row or its top CandidatesNeeded() (candidates.h: the same tokens
// either way), with the row's logsumexp; `logit_metrics` are the whole row's. `key` addresses
// this step (seed, position, branch id, draw index 0); ADAPTIVE uses draw indices
// 0..n_samples−1.
absl::StatusOr<StepOutcome> PolicyStep(const Candidates& candidates,
                                       const LogitMetrics& logit_metrics,
                                       const AttentionMetrics& attention,
                                       const PolicyConfig& config, const DecisionContext& context,
                                       const RngKey& key, const StepOptions& options);

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_POLICY_STEP_H_
