// The last layer's attention statistics on the device (entropix/attention_metrics.h), for every
// reduced row of a step at once, with no host round trip inside: pass 1 reduces each head's
// scaled scores, in chunks of keys, into partial AttentionHeadState (and flags non-finite
// scores); pass 2 merges each head's chunks and computes its log-normaliser over the row's slots
// (EXACT: the visible keys; REFERENCE: the buffer, whose empty slots are analytic, exactly as
// entropix::HeadLogNormalizer); pass 3 sums the agreement term |A_hk − mean_h A_hk| over the
// visible keys, per chunk. The host finishes, after the step's one copy back, with
// entropix::CombineAttentionMetrics over the merged heads and the sum of the chunk sums.
#ifndef ARBOR_KERNELS_ATTENTION_STATS_CUDA_H_
#define ARBOR_KERNELS_ATTENTION_STATS_CUDA_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "base/softmax_moments.h"

namespace arbor::kernels {

inline constexpr int64_t kAttentionStatsChunk = 1024;  // Keys per CTA.

inline int64_t AttentionStatsChunks(int64_t keys) {
  return (keys + kAttentionStatsChunk - 1) / kAttentionStatsChunk;
}

// Field for field entropix::AttentionHeadState (attention_metrics.h cannot be included from a .cu
// file; the GPU test asserts the layouts agree), so merged heads copy straight into it.
struct AttentionHeadPartial {
  base::SoftmaxMoments moments;
  double abs_sum = 0.0;
  int64_t count = 0;
};

struct AttentionStatsParams {
  // Per sequence of the step: its scores [num_heads, keys[s]] (row stride keys[s]), as the paged
  // attention kernel writes them, or null; and its number of keys (≥ 1 where scores are set).
  float* const* scores = nullptr;
  const int32_t* keys = nullptr;
  // Per reduced row: the sequence it reads, and its slots (keys in EXACT mode, the reference
  // buffer max(reference_len, keys) in REFERENCE mode).
  const int32_t* seq = nullptr;
  const int32_t* slots = nullptr;
  int64_t rows = 0;
  int64_t num_heads = 0;
  int64_t max_chunks = 0;  // AttentionStatsChunks of the largest keys among the rows.
  // Workspace: [rows, num_heads, max_chunks] partials and non-finite flags, [rows, num_heads]
  // log-normalisers.
  AttentionHeadPartial* partials = nullptr;
  int32_t* chunk_non_finite = nullptr;
  double* log_normalizers = nullptr;
  // Outputs: [rows, num_heads] merged heads; [rows] 1 when a score was NaN or ±inf (the row's
  // figures are then meaningless), else 0; [rows, max_chunks] agreement sums (0 past a row's
  // chunks).
  AttentionHeadPartial* heads = nullptr;
  int32_t* non_finite = nullptr;
  double* agreement_sums = nullptr;
};

// Device pointers; asynchronous on `stream`. cudaErrorInvalidValue for more than 65535 rows or
// heads, or more than 1024 heads.
cudaError_t LaunchAttentionStats(const AttentionStatsParams& params, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_ATTENTION_STATS_CUDA_H_
