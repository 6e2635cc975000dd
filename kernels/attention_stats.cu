#include <cmath>

#include "kernels/attention_stats_cuda.h"
#include "kernels/softmax_moments_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kThreads = 256;

// Grid (chunk, head, row): the chunk's moments, Σ|s| and whether it holds a non-finite score.
// Chunks past the row's keys leave an empty partial.
__global__ void HeadStatsKernel(AttentionStatsParams p) {
  const int64_t chunk = blockIdx.x, head = blockIdx.y, row = blockIdx.z;
  const int32_t seq = p.seq[row];
  const int64_t keys = p.keys[seq];
  const int64_t begin = chunk * kAttentionStatsChunk;
  const int64_t at = (row * p.num_heads + head) * p.max_chunks + chunk;
  AttentionHeadPartial* out = &p.partials[at];
  if (begin >= keys) {
    if (threadIdx.x == 0) {
      out->moments.max = -INFINITY;
      out->moments.sum = out->moments.sum_x = out->moments.sum_xx = 0.0;
      out->abs_sum = 0.0;
      out->count = 0;
      p.chunk_non_finite[at] = 0;
    }
    return;
  }
  const int64_t n = min(kAttentionStatsChunk, keys - begin);
  const float* scores = p.scores[seq] + head * keys + begin;
  __shared__ double scratch[32];
  int local_bad = 0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) local_bad |= !isfinite(scores[i]);
  const double abs_sum = BlockChunkMoments(scores, n, &out->moments, scratch);
  const int bad = BlockReduce(local_bad, reinterpret_cast<int*>(scratch), DeviceMax());
  if (threadIdx.x == 0) {
    out->abs_sum = abs_sum;
    out->count = n;
    p.chunk_non_finite[at] = bad;
  }
}

// Grid (row), a thread per head: merges the head's chunks in chunk order, then its log-normaliser
// over the row's slots (the empty REFERENCE slots score exactly 0).
__global__ void HeadMergeKernel(AttentionStatsParams p) {
  const int64_t row = blockIdx.x;
  __shared__ int any_bad;
  if (threadIdx.x == 0) any_bad = 0;
  __syncthreads();
  for (int64_t head = threadIdx.x; head < p.num_heads; head += blockDim.x) {
    const int64_t first = (row * p.num_heads + head) * p.max_chunks;
    AttentionHeadPartial merged = p.partials[first];
    int bad = p.chunk_non_finite[first];
    for (int64_t c = 1; c < p.max_chunks; ++c) {
      const AttentionHeadPartial& part = p.partials[first + c];
      merged.moments.Merge(part.moments);
      merged.abs_sum += part.abs_sum;
      merged.count += part.count;
      bad |= p.chunk_non_finite[first + c];
    }
    p.heads[row * p.num_heads + head] = merged;
    base::SoftmaxMoments slots = merged.moments;
    slots.AddConstant(0.0, static_cast<double>(p.slots[row] - merged.count));
    p.log_normalizers[row * p.num_heads + head] = slots.LogSumExp();
    if (bad) atomicOr(&any_bad, 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) p.non_finite[row] = any_bad;
}

// Grid (chunk, row): per key, every head's probability, their mean, and the summed deviations. The
// per-key loop over heads reads a column of the scores; heads are few (≤ 128), keys many.
__global__ void AgreementKernel(AttentionStatsParams p) {
  const int64_t row = blockIdx.y;
  const int32_t seq = p.seq[row];
  const int64_t keys = p.keys[seq];
  const int64_t begin = blockIdx.x * kAttentionStatsChunk;
  const int64_t end = min(keys, begin + kAttentionStatsChunk);
  const float* scores = p.scores[seq];
  const double* log_norm = p.log_normalizers + row * p.num_heads;
  double local = 0.0;
  for (int64_t key = begin + threadIdx.x; key < end; key += kThreads) {
    float mean = 0.0f;
    for (int64_t h = 0; h < p.num_heads; ++h) {
      mean += expf(scores[h * keys + key] - static_cast<float>(log_norm[h]));
    }
    mean /= static_cast<float>(p.num_heads);
    for (int64_t h = 0; h < p.num_heads; ++h) {
      const float a = expf(scores[h * keys + key] - static_cast<float>(log_norm[h]));
      local += fabsf(a - mean);
    }
  }
  __shared__ double scratch[32];
  const double total = BlockReduce(local, scratch, DeviceAdd());
  if (threadIdx.x == 0) p.agreement_sums[row * p.max_chunks + blockIdx.x] = total;
}

}  // namespace

cudaError_t LaunchAttentionStats(const AttentionStatsParams& p, cudaStream_t stream) {
  if (p.rows == 0 || p.num_heads == 0 || p.max_chunks == 0) return cudaSuccess;
  if (p.rows > 65535 || p.num_heads > 1024 || p.max_chunks > (int64_t{1} << 31) - 1) {
    return cudaErrorInvalidValue;
  }
  const dim3 chunks_heads_rows(p.max_chunks, p.num_heads, p.rows);
  HeadStatsKernel<<<chunks_heads_rows, kThreads, 0, stream>>>(p);
  HeadMergeKernel<<<p.rows, 128, 0, stream>>>(p);
  AgreementKernel<<<dim3(p.max_chunks, p.rows), kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace arbor::kernels
