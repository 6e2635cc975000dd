// Uncertainty of the next-token distribution from one row of raw logits (docs/ARCHITECTURE.md
// §4.1): entropy and varentropy in bits, log-sum-exp, and the top-K tokens with their
// log-probabilities at temperature 1. This is the worker's CPU path and the reference for the fused
// GPU pass; a GPU kernel reduces the row into base::SoftmaxMoments chunks and finishes with
// FinishLogitMetrics.
#ifndef ARBOR_ENTROPIX_LOGIT_METRICS_H_
#define ARBOR_ENTROPIX_LOGIT_METRICS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "base/softmax_moments.h"
#include "entropix/top_k.h"

namespace arbor::entropix {

struct TokenLogprob {
  int32_t id = 0;
  float logprob = 0.0f;  // Natural log at T = 1, ≤ 0.
};

struct LogitMetrics {
  float entropy = 0.0f;     // H, bits, [0, log2 n].
  float varentropy = 0.0f;  // V, bits², ≥ 0.
  float logsumexp = 0.0f;   // log Σ exp(logits), nats (unit of the logits).
  float max_logit = 0.0f;
  std::vector<TokenLogprob> top_k;  // Most likely first; ties by lower id.
};

// Metrics of logits[0..n) with the `top_k` (in [0, n]) most likely tokens. Entries may be −inf
// (masked tokens) but at least one must be finite; NaN or +inf → InvalidArgument naming the
// index.
absl::StatusOr<LogitMetrics> ComputeLogitMetrics(const float* logits, int n, int top_k);
// The same for a bf16 row (widened exactly to float).
absl::StatusOr<LogitMetrics> ComputeLogitMetrics(const uint16_t* logits_bf16, int n, int top_k);

// Everything a decode step reads from one row of logits, in one pass over it (each chunk stays in
// L1 between the non-finite check, the moments and the top-K offers): the metrics, the row's best
// entries and one probed token's logit and rank.
struct LogitSummary {
  LogitMetrics metrics;           // top_k left empty: see best.
  double logsumexp = 0.0;         // metrics.logsumexp before rounding to float.
  std::vector<ScoredIndex> best;  // The min(k, n) largest entries, canonical order.
  float probe_logit = 0.0f;       // logits[probe], when probe ≥ 0.
  int32_t probe_rank = 0;         // 1 + entries strictly larger than it.
};

// How SummarizeLogits may share one row among threads: `parts` contiguous ranges of the row,
// each summarized by run(parts, fn) calling fn(0) … fn(parts − 1), possibly at once on other
// threads, and returning when all have returned. Without `run` the parts are summarized here, in
// order. The summary is the same, bit for bit, for any split: each chunk of the row is reduced
// alone and the chunks are merged in their order, as one pass over the row merges them.
struct RowSplit {
  int parts = 1;
  std::function<void(int, const std::function<void(int)>&)> run;
};

// The summary of logits[0..n) with its `k` (in [0, n]) best entries and `probe` (−1, or in
// [0, n)); errors as ComputeLogitMetrics.
absl::StatusOr<LogitSummary> SummarizeLogits(const float* logits, int n, int k, int probe,
                                             const RowSplit& split = {});

// The final combine of a chunked reduction: entropy, varentropy, log-sum-exp and max from the
// merged moments of the whole row (top_k left empty; the caller fills it from its own
// selection). InvalidArgument when the moments saw no finite logit.
absl::StatusOr<LogitMetrics> FinishLogitMetrics(const base::SoftmaxMoments& moments);

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_LOGIT_METRICS_H_
