#include <climits>

#include "kernels/logit_stats_cuda.h"
#include "kernels/softmax_moments_cuda.h"
#include "kernels/warp_reduce_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kThreads = 512;
constexpr int kMergeThreads = 256;                             // 8 candidates per CTA, a warp each.
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
  // The probe's logit, when the records rank one: this chunk counts the logits above it.
  const int32_t probe =
      p.records != nullptr && p.probe_tokens != nullptr ? p.probe_tokens[row] : -1;
  const float probe_logit = probe >= 0 ? p.logits[row * p.stride + probe] : 0.0f;
  int local_bad = INT_MAX, above = 0;
  for (int i = threadIdx.x; i < kSortSize; i += kThreads) {
    float value = -INFINITY;
    if (i < n) {
      value = x[i];
      above += value > probe_logit;
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
  if (probe >= 0) {  // Uniform over the block: BlockReduce's barriers are reached by all.
    const int total_above = BlockReduce(above, reinterpret_cast<int*>(scratch), DeviceAdd());
    if (threadIdx.x == 0) p.probe_above[out] = total_above;
  }
  if (p.top_k == 0) return;
  __syncthreads();
  SortCanonical(v, id);
  for (int i = threadIdx.x; i < p.top_k; i += kThreads) {
    p.candidate_values[out * p.top_k + i] = v[i];
    p.candidate_ids[out * p.top_k + i] = id[i];
  }
}

// Whether candidate a ranks before candidate b: the canonical order, then the slot (chunk·k +
// position) — which only separates the (−inf, INT_MAX) padding of chunks shorter than k.
__device__ bool CandidateBefore(float va, int32_t ia, int64_t sa, float vb, int32_t ib,
                                int64_t sb) {
  if (va != vb) return va > vb;
  if (ia != ib) return ia < ib;
  return sa < sb;
}

// Grid (candidate blocks, row), spread over the SMs: a warp ranks one candidate among all of
// its row's — its position in its own chunk's sorted list plus, found by binary search with the
// lanes over the chunks, the entries of every other chunk's list that rank before it — and
// writes it to the top-K when its rank is below k. Ranks are distinct, so every top-K slot is
// written exactly once.
__global__ void __launch_bounds__(kMergeThreads) MergeKernel(LogitStatsParams p, int64_t chunks) {
  const int64_t row = blockIdx.y, k = p.top_k, total = chunks * k;
  const int64_t slot = blockIdx.x * int64_t{kMergeThreads / 32} + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (slot >= total) return;  // Uniform over the warp.
  const float* cand_v = p.candidate_values + row * total;
  const int32_t* cand_id = p.candidate_ids + row * total;
  const float v = cand_v[slot];
  const int32_t id = cand_id[slot];
  const int64_t own = slot / k;
  int64_t before = 0;
  for (int64_t c = lane; c < chunks; c += 32) {
    if (c == own) continue;
    int64_t lo = 0, hi = k;  // The first entry of chunk c that does not rank before this one.
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2, s = c * k + mid;
      if (CandidateBefore(cand_v[s], cand_id[s], s, v, id, slot)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    before += lo;
  }
  const int64_t rank = slot % k + WarpSum(before);
  if (lane == 0 && rank < k) {
    p.top_values[row * k + rank] = v;
    p.top_ids[row * k + rank] = id;
  }
}

// A thread per row merges the chunks in order (as the host would) and sums their counts above
// the probe's logit.
__global__ void RecordKernel(LogitStatsParams p, int64_t chunks) {
  const int64_t row = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (row >= p.rows) return;
  const int32_t probe = p.probe_tokens != nullptr ? p.probe_tokens[row] : -1;
  // Copies, not a default-constructed record: its initialisers are host-only constexpr calls.
  base::SoftmaxMoments moments = p.moments[row * chunks];
  int32_t first_non_finite = p.first_non_finite[row * chunks];
  int32_t above = probe >= 0 ? p.probe_above[row * chunks] : 0;
  for (int64_t c = 1; c < chunks; ++c) {
    moments.Merge(p.moments[row * chunks + c]);
    if (first_non_finite < 0) first_non_finite = p.first_non_finite[row * chunks + c];
    if (probe >= 0) above += p.probe_above[row * chunks + c];
  }
  LogitRecord* out = &p.records[row];
  out->moments = moments;
  out->first_non_finite = first_non_finite;
  out->probe_rank = probe >= 0 ? above + 1 : 0;
  out->probe_logit = probe >= 0 ? p.logits[row * p.stride + probe] : 0.0f;
}

}  // namespace

cudaError_t LaunchLogitStats(const LogitStatsParams& p, cudaStream_t stream) {
  if (p.rows == 0 || p.vocab == 0) return cudaSuccess;
  if (p.top_k < 0 || p.top_k > kLogitStatsMaxTopK || p.rows > 65535 ||
      (p.records != nullptr && p.probe_tokens != nullptr && p.probe_above == nullptr)) {
    return cudaErrorInvalidValue;
  }
  const int64_t chunks = LogitStatsChunks(p.vocab);
  ChunkKernel<<<dim3(chunks, p.rows), kThreads, 0, stream>>>(p);
  if (p.top_k > 0) {
    const int64_t per_block = kMergeThreads / 32;
    const int64_t blocks = (chunks * p.top_k + per_block - 1) / per_block;
    MergeKernel<<<dim3(blocks, p.rows), kMergeThreads, 0, stream>>>(p, chunks);
  }
  if (p.records != nullptr) {
    constexpr int kRecordThreads = 64;
    RecordKernel<<<(p.rows + kRecordThreads - 1) / kRecordThreads, kRecordThreads, 0, stream>>>(
        p, chunks);
  }
  return cudaGetLastError();
}

}  // namespace arbor::kernels
