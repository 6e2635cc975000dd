#include <climits>

#include "kernels/logit_stats_cuda.h"
#include "kernels/softmax_moments_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kThreads = 512;
constexpr int kSortSize = static_cast<int>(kLogitStatsChunk);  // Power of two.

// entropix::RanksBefore on (value, id) pairs.
__device__ bool RanksBefore(float va, int32_t ia, float vb, int32_t ib) {
  return va > vb || (va == vb && ia < ib);
}

// Sorts kSortSize (value, id) pairs in shared memory into the canonical order (bitonic network).
__device__ void SortCanonical(float* v, int32_t* id) {
  for (int k = 2; k <= kSortSize; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < kSortSize; i += blockDim.x) {
        const int partner = i ^ j;
        if (partner <= i) continue;
        const bool first_ranks_first = (i & k) == 0;
        const bool partner_better = RanksBefore(v[partner], id[partner], v[i], id[i]);
        if (partner_better == first_ranks_first) {
          const float tv = v[i];
          v[i] = v[partner];
          v[partner] = tv;
          const int32_t ti = id[i];
          id[i] = id[partner];
          id[partner] = ti;
        }
      }
      __syncthreads();
    }
  }
}

// Grid (chunk, row). The chunk is staged once in shared memory (NaN/+inf replaced by −inf after
// noting the first), reduced into moments, then sorted for its top-K candidates.
__global__ void __launch_bounds__(kThreads) ChunkKernel(LogitStatsParams p) {
  const int64_t row = blockIdx.y, chunk = blockIdx.x;
  const int64_t chunks = gridDim.x;
  const int64_t begin = chunk * kLogitStatsChunk;
  const int n = static_cast<int>(min(kLogitStatsChunk, p.vocab - begin));
  __shared__ float v[kSortSize];
  __shared__ int32_t id[kSortSize];
  __shared__ double scratch[32];
  const float* x = p.logits + row * p.stride + begin;
  int local_bad = INT_MAX;
  for (int i = threadIdx.x; i < kSortSize; i += kThreads) {
    float value = -INFINITY;
    if (i < n) {
      value = x[i];
      if (!(value < INFINITY)) {
        local_bad = min(local_bad, i);
        value = -INFINITY;
      }
    }
    v[i] = value;
    id[i] = i < n ? static_cast<int32_t>(begin + i) : INT_MAX;
  }
  __syncthreads();
  const int64_t out = row * chunks + chunk;
  BlockChunkMoments(v, n, &p.moments[out], scratch);
  const int bad = BlockReduce(local_bad, reinterpret_cast<int*>(scratch), DeviceMin());
  if (threadIdx.x == 0) {
    p.first_non_finite[out] = bad == INT_MAX ? -1 : static_cast<int32_t>(begin + bad);
  }
  if (p.top_k == 0) return;
  __syncthreads();
  SortCanonical(v, id);
  for (int i = threadIdx.x; i < p.top_k; i += kThreads) {
    p.candidate_values[out * p.top_k + i] = v[i];
    p.candidate_ids[out * p.top_k + i] = id[i];
  }
}

// One block per row: keeps the best top_k in the first slots of the sort buffer and refills the
// rest with the next candidates until every chunk's candidates have been ranked.
__global__ void __launch_bounds__(kThreads) MergeKernel(LogitStatsParams p, int64_t chunks) {
  const int64_t row = blockIdx.x;
  const int64_t k = p.top_k;
  const int64_t total = chunks * k;
  const float* cand_v = p.candidate_values + row * total;
  const int32_t* cand_id = p.candidate_ids + row * total;
  __shared__ float v[kSortSize];
  __shared__ int32_t id[kSortSize];
  for (int i = threadIdx.x; i < k; i += kThreads) {
    v[i] = -INFINITY;
    id[i] = INT_MAX;
  }
  for (int64_t next = 0; next < total; next += kSortSize - k) {
    for (int64_t i = k + threadIdx.x; i < kSortSize; i += kThreads) {
      const int64_t c = next + i - k;
      v[i] = c < total ? cand_v[c] : -INFINITY;
      id[i] = c < total ? cand_id[c] : INT_MAX;
    }
    __syncthreads();
    SortCanonical(v, id);
  }
  for (int i = threadIdx.x; i < k; i += kThreads) {
    p.top_values[row * k + i] = v[i];
    p.top_ids[row * k + i] = id[i];
  }
}

// One block per row: thread 0 merges the chunks in order (as the host would), every thread
// counts the entries above the probe's logit.
__global__ void __launch_bounds__(kThreads) RecordKernel(LogitStatsParams p, int64_t chunks) {
  const int64_t row = blockIdx.x;
  const int32_t probe = p.probe_tokens != nullptr ? p.probe_tokens[row] : -1;
  const float* x = p.logits + row * p.stride;
  int above = 0;
  const float probe_logit = probe >= 0 ? x[probe] : 0.0f;
  if (probe >= 0) {
    for (int64_t i = threadIdx.x; i < p.vocab; i += kThreads) above += x[i] > probe_logit;
  }
  __shared__ int scratch[32];
  above = BlockReduce(above, scratch, DeviceAdd());
  if (threadIdx.x != 0) return;
  // Copies, not a default-constructed record: its initialisers are host-only constexpr calls.
  entropix::SoftmaxMoments moments = p.moments[row * chunks];
  int32_t first_non_finite = p.first_non_finite[row * chunks];
  for (int64_t c = 1; c < chunks; ++c) {
    moments.Merge(p.moments[row * chunks + c]);
    if (first_non_finite < 0) first_non_finite = p.first_non_finite[row * chunks + c];
  }
  LogitRecord* out = &p.records[row];
  out->moments = moments;
  out->first_non_finite = first_non_finite;
  out->probe_rank = probe >= 0 ? above + 1 : 0;
  out->probe_logit = probe_logit;
}

}  // namespace

cudaError_t LaunchLogitStats(const LogitStatsParams& p, cudaStream_t stream) {
  if (p.rows == 0 || p.vocab == 0) return cudaSuccess;
  if (p.top_k < 0 || p.top_k > kLogitStatsMaxTopK || p.rows > 65535) {
    return cudaErrorInvalidValue;
  }
  const int64_t chunks = LogitStatsChunks(p.vocab);
  ChunkKernel<<<dim3(chunks, p.rows), kThreads, 0, stream>>>(p);
  if (p.top_k > 0) MergeKernel<<<p.rows, kThreads, 0, stream>>>(p, chunks);
  if (p.records != nullptr) RecordKernel<<<p.rows, kThreads, 0, stream>>>(p, chunks);
  return cudaGetLastError();
}

}  // namespace arbor::kernels
