// What a backend's forward reduces one row's next-token distribution to, so the engine never
// needs the vocabulary-wide logits row or the last layer's score rows: the entropix metrics of the
// logits (entropy, varentropy, log-sum-exp, max), the row's best candidates (the sampler's input,
// entropix/candidates.h), optionally one probed token's logit and rank, and the attention
// statistics of the row's last query (docs/ARCHITECTURE.md §4.1). A few hundred floats instead of
// ~1 MB per row on a 128,256-token vocabulary, which a GPU backend computes on the device and
// copies back once per step.
//
// ReduceRowOnHost is the host implementation over full rows: the CPU backend's path, and the CUDA
// backend's for requests its device kernels cannot serve.
#ifndef ARBOR_WORKER_BACKEND_ROW_REDUCTION_H_
#define ARBOR_WORKER_BACKEND_ROW_REDUCTION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "entropix/attention_metrics.h"
#include "entropix/candidates.h"
#include "entropix/logit_metrics.h"
#include "entropix/logit_processors.h"
#include "kernels/cpu/thread_pool.h"

namespace arbor::worker {

struct ReductionRequest {
  // The row's best logits wanted, in the canonical order (logit descending, then id ascending);
  // ≥ 0, more than the vocabulary gives the whole row.
  int32_t candidates = 0;
  // A token whose logit and rank are wanted (the scored token of teacher-forced scoring,
  // CANONICAL's thinking token), or −1.
  int32_t probe_token = -1;
  // How the attention statistics treat the keys (entropix/attention_metrics.h); reference_len ≥ 1.
  entropix::AttentionMode attention_mode = entropix::AttentionMode::kExact;
  int32_t reference_len = 1;
  // Logit processors' changes (entropix/logit_processors.h), tokens in [0, vocab): applied to the
  // row before anything is reduced from it, so metrics, candidates and the probe all see them.
  absl::Span<const entropix::LogitAdjustment> adjustments = {};
  // An output constraint's mask (grammar/token_masker.h: bit i of word i / 64 allows token i),
  // or empty for none: every other token's logit becomes −inf after the adjustments, and the
  // candidates stop at the last allowed token.
  absl::Span<const uint64_t> allowed = {};
};

struct RowReduction {
  ReductionRequest request;  // Set by the caller before the forward.

  // Filled by the forward. A row whose logits hold NaN or +inf, or whose last-layer scores are not
  // finite, gets InvalidArgument here naming the entry, and nothing else: the failure belongs to
  // that row's item, while Forward itself succeeds for the other rows.
  absl::Status status;
  entropix::LogitMetrics logits;  // top_k stays empty: see candidates.
  entropix::AttentionMetrics attention;
  entropix::CandidateRow candidates;  // min(request.candidates, vocab) entries.
  float probe_logit = 0.0f;
  int32_t probe_rank = 0;  // 1 + the number of tokens with a strictly larger logit.
};

// Reduces `logits` ([vocab]) and `scores` ([num_heads, keys], the last layer's scaled scores of
// the row's last token) into `out` as its request asks; `split` may share the logits' summary
// among threads (entropix::RowSplit: the same result).
void ReduceRowOnHost(absl::Span<const float> logits, const float* scores, int num_heads, int keys,
                     RowReduction& out, const entropix::RowSplit& split = {});

// A split of one row's summary into a part per thread of `pool`, run on it.
entropix::RowSplit RowSplitOn(kernels::ThreadPool& pool);

// INVALID_ARGUMENT naming the field when a request cannot be served for a vocabulary of `vocab`.
absl::Status ValidateReductionRequest(const ReductionRequest& request, int32_t vocab);

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_BACKEND_ROW_REDUCTION_H_
