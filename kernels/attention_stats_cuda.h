// The last layer's attention statistics on the device (entropix/attention_metrics.h): pass 1
// reduces each head's scaled scores, in chunks of keys, into partial AttentionHeadState; the host
// merges them and computes each head's entropix::HeadLogNormalizer (EXACT or REFERENCE — the
// mode only enters there and in the final combine, where REFERENCE's empty slots are analytic);
// pass 2 sums the agreement term |A_hk − mean_h A_hk| over the visible keys, per chunk; the host
// finishes with entropix::CombineAttentionMetrics.
#ifndef ARBOR_KERNELS_ATTENTION_STATS_CUDA_H_
#define ARBOR_KERNELS_ATTENTION_STATS_CUDA_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "entropix/softmax_moments.h"

namespace arbor::kernels {

inline constexpr int64_t kAttentionStatsChunk = 1024;  // Keys per CTA.

inline int64_t AttentionStatsChunks(int64_t keys) {
  return (keys + kAttentionStatsChunk - 1) / kAttentionStatsChunk;
}

// Field for field entropix::AttentionHeadState (attention_metrics.h cannot be included from a .cu
// file; the GPU test asserts the layouts agree), so partials copy straight into it.
struct AttentionHeadPartial {
  entropix::SoftmaxMoments moments;
  double abs_sum = 0.0;
  int64_t count = 0;
};

struct AttentionStatsParams {
  const float* scores = nullptr;  // [num_heads, keys], finite; row h at scores + h·row_stride.
  int64_t num_heads = 0;
  int64_t keys = 0;
  int64_t row_stride = 0;
  // Pass 1 output: [num_heads, AttentionStatsChunks(keys)].
  AttentionHeadPartial* partials = nullptr;
  // Pass 2 input: [num_heads] natural-log normalisers (HeadLogNormalizer).
  const double* log_normalizers = nullptr;
  // Pass 2 output: [AttentionStatsChunks(keys)] agreement sums over every head and the chunk's
  // keys.
  double* agreement_sums = nullptr;
};

// Device pointers; asynchronous on `stream`.
cudaError_t LaunchAttentionHeadStats(const AttentionStatsParams& params, cudaStream_t stream);
cudaError_t LaunchAttentionAgreement(const AttentionStatsParams& params, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_ATTENTION_STATS_CUDA_H_
