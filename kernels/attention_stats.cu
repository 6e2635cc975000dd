#include "kernels/attention_stats_cuda.h"
#include "kernels/softmax_moments_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kThreads = 256;

// Grid (chunk, head): the chunk's moments and Σ|s|.
__global__ void HeadStatsKernel(AttentionStatsParams p) {
  const int64_t chunk = blockIdx.x, head = blockIdx.y;
  const int64_t begin = chunk * kAttentionStatsChunk;
  const int64_t n = min(kAttentionStatsChunk, p.keys - begin);
  __shared__ double scratch[32];
  AttentionHeadPartial* out = &p.partials[head * gridDim.x + chunk];
  const double abs_sum =
      BlockChunkMoments(p.scores + head * p.row_stride + begin, n, &out->moments, scratch);
  if (threadIdx.x == 0) {
    out->abs_sum = abs_sum;
    out->count = n;
  }
}

// Grid (chunk): per key, every head's probability, their mean, and the summed deviations. The
// per-key loop over heads reads a column of the scores; heads are few (≤ 128), keys many.
__global__ void AgreementKernel(AttentionStatsParams p) {
  const int64_t begin = blockIdx.x * kAttentionStatsChunk;
  const int64_t end = min(p.keys, begin + kAttentionStatsChunk);
  double local = 0.0;
  for (int64_t key = begin + threadIdx.x; key < end; key += kThreads) {
    float mean = 0.0f;
    for (int64_t h = 0; h < p.num_heads; ++h) {
      mean += expf(p.scores[h * p.row_stride + key] - static_cast<float>(p.log_normalizers[h]));
    }
    mean /= static_cast<float>(p.num_heads);
    for (int64_t h = 0; h < p.num_heads; ++h) {
      const float a =
          expf(p.scores[h * p.row_stride + key] - static_cast<float>(p.log_normalizers[h]));
      local += fabsf(a - mean);
    }
  }
  __shared__ double scratch[32];
  const double total = BlockReduce(local, scratch, DeviceAdd());
  if (threadIdx.x == 0) p.agreement_sums[blockIdx.x] = total;
}

}  // namespace

cudaError_t LaunchAttentionHeadStats(const AttentionStatsParams& p, cudaStream_t stream) {
  if (p.keys == 0 || p.num_heads == 0) return cudaSuccess;
  if (p.num_heads > 65535) return cudaErrorInvalidValue;
  HeadStatsKernel<<<dim3(AttentionStatsChunks(p.keys), p.num_heads), kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t LaunchAttentionAgreement(const AttentionStatsParams& p, cudaStream_t stream) {
  if (p.keys == 0 || p.num_heads == 0) return cudaSuccess;
  AgreementKernel<<<AttentionStatsChunks(p.keys), kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace arbor::kernels
