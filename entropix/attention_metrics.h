// Statistics of the last layer's attention for the current query (docs/ARCHITECTURE.md §4.1): per
// query head h, over the keys it may see, with scaled scores s = q·k/√d and A = softmax(s):
//   E_h = −Σ_k A·log2 A;  attn_entropy = mean_h E_h;  attn_varentropy = population variance of
//   E_h over heads;  attn_head_varentropy = mean_h Σ_k A·(log2 A + E_h)²;
//   agreement = mean over heads and keys of |A_hk − mean_h A_hk|;
//   interaction_strength = mean over heads and keys of |s_hk|.
// EXACT mode averages over the n visible keys. REFERENCE mode reproduces the canonical entropix
// sampler: the softmax runs over a buffer of reference_len slots whose n..L empty slots score
// exactly 0, and every mean over keys divides by L; the empty slots are added analytically, never
// materialised. A buffer never holds fewer slots than there are keys, so L = max(reference_len, n)
// and REFERENCE equals EXACT once the context outgrows the buffer.
//
// A fused GPU kernel builds one AttentionHeadState per head (chunks merged in any order), then
// makes a second pass for the agreement sum using HeadLogNormalizer, and finishes with
// CombineAttentionMetrics; ComputeAttentionMetrics does all of it on the CPU.
#ifndef ARBOR_ENTROPIX_ATTENTION_METRICS_H_
#define ARBOR_ENTROPIX_ATTENTION_METRICS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/softmax_moments.h"

namespace arbor::entropix {

enum class AttentionMode {
  kExact,      // Only the visible keys.
  kReference,  // The canonical zero-padded buffer of reference_len slots.
};

// Online state of one head: softmax moments of its scores, Σ|s| and the number of keys.
struct AttentionHeadState {
  base::SoftmaxMoments moments;
  double abs_sum = 0.0;  // Σ |s| over the visible keys.
  int64_t count = 0;     // Visible keys.

  // Adds scores[0..n), which must be finite (the caller validates; see base::FindNonFinite).
  void AddScores(const float* scores, int64_t n);
  void Merge(const AttentionHeadState& other);
};

struct AttentionMetrics {
  float attn_entropy = 0.0f;          // bits.
  float attn_varentropy = 0.0f;       // bits², population variance over heads.
  float attn_head_varentropy = 0.0f;  // bits², mean over heads of the per-head varentropy.
  float agreement = 0.0f;             // [0, 2]; larger = heads disagree.
  float interaction_strength = 0.0f;  // Mean |s|.
};

// log Σ exp over head's slots in `mode` (REFERENCE includes the empty slots), so that
// A_hk = exp(s_hk − HeadLogNormalizer(...)) for the agreement pass.
double HeadLogNormalizer(const AttentionHeadState& head, AttentionMode mode, int reference_len);

// The final combine. `agreement_visible_sum` is Σ_h Σ_{visible k} |A_hk − mean_h A_hk| with A as
// above; REFERENCE mode adds the empty slots' share itself. Every head must have the same number
// (≥ 1) of keys; reference_len must be ≥ 1.
absl::StatusOr<AttentionMetrics> CombineAttentionMetrics(absl::Span<const AttentionHeadState> heads,
                                                         double agreement_visible_sum,
                                                         AttentionMode mode, int reference_len);

// Everything from the scaled scores of `heads` rows of `keys` entries, row h starting at
// scores + h·row_stride. Scores must be finite: NaN or ±inf → InvalidArgument naming the entry.
absl::StatusOr<AttentionMetrics> ComputeAttentionMetrics(const float* scores, int heads, int keys,
                                                         int64_t row_stride, AttentionMode mode,
                                                         int reference_len);

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_ATTENTION_METRICS_H_
