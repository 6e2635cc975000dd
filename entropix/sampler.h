// The one sampler of docs/ARCHITECTURE.md §4.3, over a candidate list (a full logits row or a
// top-K):
//   temperature → min_p (drop p < min_p·p_max) → top_k → descending top_p (keep ≥ 1)
//   → renormalise → categorical draw with a counter-based uniform.
// On top of it: ADAPTIVE multi-sample with the canonical score, distinct candidates for BRANCH,
// and BACKSPACE's re-draw (Sample with the removed token banned). Work is linear in the row plus
// a partial selection of the survivors; the vocabulary is never sorted. The worker's per-step
// entry point (decide, then sample) is entropix/policy_step.h.
#ifndef ARBOR_ENTROPIX_SAMPLER_H_
#define ARBOR_ENTROPIX_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "entropix/policy_config.h"
#include "entropix/rng.h"

namespace arbor::entropix {

// What to sample from. Entries may be −inf (impossible); NaN or +inf is an error.
struct Candidates {
  absl::Span<const float> logits;
  absl::Span<const int32_t> ids;  // Token id of each logit; empty: the id is the index.
  // Normaliser of the T = 1 distribution the logits come from, so that a token's reported
  // logprob is logit − logsumexp (a full row: its LogitMetrics::logsumexp; top-K log-probs: 0).
  double logsumexp = 0.0;
};

struct SampledToken {
  int32_t id = 0;
  float logprob = 0.0f;  // At T = 1: logit − Candidates::logsumexp.
};

// One token of the transformed distribution.
struct WeightedToken {
  int32_t id = 0;
  double prob = 0.0;     // After the whole pipeline, renormalised.
  float logprob = 0.0f;  // At T = 1.
};

// The distribution the pipeline draws from, most likely first (ties: earlier candidate first).
// `banned` ids are removed first (BACKSPACE). top_k ≤ 0 keeps every candidate; min_p = 0 and
// top_p = 1 disable their filters. FailedPrecondition when nothing is left to draw.
absl::StatusOr<std::vector<WeightedToken>> TransformedDistribution(
    const Candidates& candidates, const SamplingParams& params,
    absl::Span<const int32_t> banned = {});

// The categorical draw: the first token whose cumulative probability exceeds u ∈ [0, 1).
const WeightedToken& DrawFrom(const std::vector<WeightedToken>& distribution, double u);

// One draw with the uniform of `key`.
absl::StatusOr<SampledToken> Sample(const Candidates& candidates, const SamplingParams& params,
                                    const RngKey& key, absl::Span<const int32_t> banned = {});

// The most likely candidate that is not banned (lowest index on ties).
absl::StatusOr<SampledToken> Argmax(const Candidates& candidates,
                                    absl::Span<const int32_t> banned = {});

struct AdaptiveSample {
  SampledToken token;
  double score = 0.0;  // logprob + confidence term.
};

// ADAPTIVE: `n_samples` draws (draw indices key.draw_index, +1, ...), each scored
// logprob + `confidence` (ConfidenceTerm of decision.h); the best is kept, the earliest on ties.
absl::StatusOr<AdaptiveSample> SampleAdaptive(const Candidates& candidates,
                                              const SamplingParams& params, int n_samples,
                                              double confidence, const RngKey& key,
                                              absl::Span<const int32_t> banned = {});

// BRANCH: up to `width` distinct tokens drawn without replacement from the transformed
// distribution (the LEHV parameters), among those with p ≥ candidate_min_p·p_max; draw i uses
// draw index key.draw_index + i. Fewer when fewer qualify. In draw order.
absl::StatusOr<std::vector<SampledToken>> SelectBranchCandidates(
    const Candidates& candidates, const SamplingParams& params, int width, float candidate_min_p,
    const RngKey& key, absl::Span<const int32_t> banned = {});

// TRACE: the `width` most likely tokens with p ≥ candidate_min_p·p_max at T = 1, most likely
// first (ties: earlier candidate first). Deterministic: nothing is drawn.
absl::StatusOr<std::vector<SampledToken>> TopBranchCandidates(const Candidates& candidates,
                                                              int width, float candidate_min_p);

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_SAMPLER_H_
