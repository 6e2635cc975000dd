#include <algorithm>
#include <cmath>

#include "kernels/paged_attention_cascade_cuda.h"
#include "kernels/paged_attention_cuda.h"
#include "kernels/paged_attention_query_cuda.h"
#include "kernels/paged_attention_warp_cuda.h"
#include "kernels/paged_kv_cuda.h"
#include "kernels/warp_reduce_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = kPagedAttentionTile;  // Keys per tile (scores in shared memory).
constexpr int kMaxGroup = kWarps;  // Query heads per kv head: one warp each for the softmax.
constexpr int kMaxHeadDim = 256;
constexpr int kVec = 8;   // Head dims per K/V load: 16 bytes of bf16 (two loads of fp32).
constexpr int kTeam = 8;  // Lanes that score one key together.
constexpr int kTeams = kThreads / kTeam;

// Scores the tile's `cnt` keys from `t0` against the group's queries `q_s` (head g at g·d):
// p_s[g][j] = q·k × scale and slot_s[j] the key's pool slot, the score also to the query's
// scores_out when it has one. A team of kTeam lanes per key, its lanes over the row's kVec
// chunks, partial dots summed with three shuffles; each team scores two keys per pass.
template <typename T, int kGroup>
__device__ __forceinline__ void ScoreTile(const PagedAttentionParams& p, const T* k_pool,
                                          const float* q_s, float (*p_s)[kTile], int64_t* slot_s,
                                          const QueryKeys& keys, int64_t kv_head, int group, int d,
                                          int64_t t0, int cnt) {
  const PagedKvLayer& c = p.cache;
  const int chunks = d / kVec;
  const int64_t width = c.num_kv_heads * c.head_dim;
  const int team = threadIdx.x / kTeam, member = threadIdx.x % kTeam;
  for (int k0 = 0; k0 < cnt; k0 += 2 * kTeams) {  // Uniform over the block: shuffles stay whole.
    float dot[2][kGroup] = {};
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int jj = k0 + u * kTeams + team;
      if (jj >= cnt) continue;
      const int64_t slot = DevicePagedSlot(p.batch, c.block_size, keys.seq, t0 + jj);
      if (member == 0) slot_s[jj] = slot;
      const T* k = k_pool + slot * width + kv_head * d;
      for (int ch = member; ch < chunks; ch += kTeam) {
        float kv[kVec];
        KvLoad8(k + ch * kVec, kv);
#pragma unroll
        for (int g = 0; g < kGroup; ++g) {
          if (g >= group) continue;
          const float* qg = q_s + g * d + ch * kVec;
#pragma unroll
          for (int e = 0; e < kVec; ++e) dot[u][g] += qg[e] * kv[e];
        }
      }
    }
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const int jj = k0 + u * kTeams + team;
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        if (g >= group) continue;  // Uniform: every lane takes the same branches.
        float s = dot[u][g];
        for (int o = kTeam / 2; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (jj < cnt && member == 0) {
          s *= p.scale;
          p_s[g][jj] = s;
          if (keys.scores_out != nullptr) {
            keys.scores_out[(kv_head * group + g) * keys.n_keys + t0 + jj] = s;
          }
        }
      }
    }
  }
}

// Online softmax over the tile: warp g < group rescales head g's running maximum m_s[g] and sum
// l_s[g] by the tile's maximum, leaving exp(score − max) in p_s[g] and the factor the head's
// accumulators scale by in alpha_s[g].
__device__ __forceinline__ void SoftmaxTile(float (*p_s)[kTile], float* m_s, float* l_s,
                                            float* alpha_s, int group, int cnt) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp >= group) return;
  float tile_max = -INFINITY;
  for (int jj = lane; jj < cnt; jj += 32) tile_max = fmaxf(tile_max, p_s[warp][jj]);
  tile_max = WarpMax(tile_max);
  const float m_old = m_s[warp];
  const float m_new = fmaxf(m_old, tile_max);
  float sum = 0.0f;
  for (int jj = lane; jj < cnt; jj += 32) {
    const float e = expf(p_s[warp][jj] - m_new);
    p_s[warp][jj] = e;
    sum += e;
  }
  sum = WarpSum(sum);
  if (lane == 0) {
    const float alpha = m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
    alpha_s[warp] = alpha;
    l_s[warp] = l_s[warp] * alpha + sum;
    m_s[warp] = m_new;
  }
}

// Sums the key lanes' accumulators head by head (through `red_s`) and writes the output row, or
// with several splits this split's partial row and its (max, sum).
template <int kGroup>
__device__ __forceinline__ void WriteHeads(const PagedAttentionParams& p,
                                           const PagedAttentionLaunch& launch,
                                           const float (&acc)[kGroup][kVec], float* red_s,
                                           const float* m_s, const float* l_s, int64_t token,
                                           int64_t split, int64_t kv_head, int group, int d) {
  const int chunks = d / kVec, key_lanes = kThreads / chunks;
  const bool accumulates = threadIdx.x / chunks < key_lanes;
  const int64_t total_splits = TotalSplits(launch);
  const int64_t head0 = kv_head * group;
#pragma unroll
  for (int g = 0; g < kGroup; ++g) {
    if (g >= group) continue;  // Uniform, so the barriers below are reached by every thread.
    if (accumulates) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) red_s[threadIdx.x * kVec + e] = acc[g][e];
    }
    __syncthreads();
    for (int dim = threadIdx.x; dim < d; dim += kThreads) {
      float sum = 0.0f;
      for (int k = 0; k < key_lanes; ++k) {
        sum += red_s[(k * chunks + dim / kVec) * kVec + dim % kVec];
      }
      if (total_splits == 1) {
        p.out[token * p.out_stride + (head0 + g) * d + dim] = sum / l_s[g];
      } else {
        const int64_t row = (token * total_splits + split) * p.num_heads + head0 + g;
        launch.workspace[row * (d + 2) + dim] = sum;
      }
    }
    __syncthreads();
  }
  if (total_splits > 1 && threadIdx.x < group) {
    const int64_t row = (token * total_splits + split) * p.num_heads + head0 + threadIdx.x;
    launch.workspace[row * (d + 2) + d] = m_s[threadIdx.x];
    launch.workspace[row * (d + 2) + d + 1] = l_s[threadIdx.x];
  }
}

// T: the pools' element type (float, or uint16_t for bf16); scores and sums stay fp32. kGroup:
// the query heads per kv head the accumulators are sized for (4 or 8; `group` ≤ kGroup).
//
// Every K/V access is one 16-byte load of kVec dims. Scores: ScoreTile, so 64 keys' loads are in
// flight per CTA. P·V: a thread per (key lane, chunk), chunks fastest (consecutive threads read
// one V row), each accumulating its keys for the whole group; the key lanes are summed once at
// the end through shared memory (WriteHeads).
template <typename T, int kGroup>
__global__ void __launch_bounds__(kThreads)
    AttentionKernel(PagedAttentionParams p, PagedAttentionLaunch launch, const T* k_pool,
                    const T* v_pool) {
  const int64_t token = blockIdx.x, kv_head = blockIdx.y, split = blockIdx.z;
  const PagedKvLayer& c = p.cache;
  const int group = static_cast<int>(p.num_heads / c.num_kv_heads);
  const int d = static_cast<int>(c.head_dim);
  const int chunks = d / kVec;
  const int64_t width = c.num_kv_heads * c.head_dim;
  const QueryKeys keys = QueryKeysOf(p, launch, token, split);

  __shared__ __align__(16) float q_s[kMaxGroup * kMaxHeadDim];
  __shared__ float p_s[kMaxGroup][kTile];
  __shared__ int64_t slot_s[kTile];
  __shared__ float m_s[kMaxGroup], l_s[kMaxGroup], alpha_s[kMaxGroup];
  __shared__ float red_s[kThreads * kVec];  // One head's P·V partial sums, for the final sum.
  const float* q = p.q + token * p.q_stride + kv_head * group * d;
  for (int i = threadIdx.x; i < group * d; i += kThreads) q_s[i] = q[i];
  if (threadIdx.x < group) {
    m_s[threadIdx.x] = -INFINITY;
    l_s[threadIdx.x] = 0.0f;
  }
  const int key_lanes = kThreads / chunks, chunk = threadIdx.x % chunks;
  const int key_lane = threadIdx.x / chunks;
  const bool accumulates = key_lane < key_lanes;  // All threads unless chunks does not divide 256.
  float acc[kGroup][kVec] = {};
  __syncthreads();

  for (int64_t t0 = keys.begin; t0 < keys.end; t0 += kTile) {
    const int cnt = static_cast<int>(min(int64_t{kTile}, keys.end - t0));
    ScoreTile<T, kGroup>(p, k_pool, q_s, p_s, slot_s, keys, kv_head, group, d, t0, cnt);
    __syncthreads();
    SoftmaxTile(p_s, m_s, l_s, alpha_s, group, cnt);
    __syncthreads();
    if (accumulates) {
#pragma unroll
      for (int g = 0; g < kGroup; ++g) {
        if (g >= group) continue;
        const float alpha = alpha_s[g];
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[g][e] *= alpha;
      }
#pragma unroll 4
      for (int jj = key_lane; jj < cnt; jj += key_lanes) {
        float v[kVec];
        KvLoad8(v_pool + slot_s[jj] * width + kv_head * d + chunk * kVec, v);
#pragma unroll
        for (int g = 0; g < kGroup; ++g) {
          if (g >= group) continue;
          const float pr = p_s[g][jj];
#pragma unroll
          for (int e = 0; e < kVec; ++e) acc[g][e] += pr * v[e];
        }
      }
    }
    __syncthreads();
  }
  WriteHeads<kGroup>(p, launch, acc, red_s, m_s, l_s, token, split, kv_head, group, d);
}

// One block per (token, head), threads over head_dim: rescale each split to the global maximum.
// Empty splits carry (−inf, 0) and weigh nothing; some split of every query holds a key.
__global__ void CombineKernel(PagedAttentionParams p, PagedAttentionLaunch launch) {
  const int64_t token = blockIdx.x, head = blockIdx.y;
  const int64_t d = p.cache.head_dim, splits = TotalSplits(launch);
  const float* rows = launch.workspace + (token * splits * p.num_heads + head) * (d + 2);
  const int64_t split_stride = p.num_heads * (d + 2);
  float m = -INFINITY;
  for (int64_t s = 0; s < splits; ++s) m = fmaxf(m, rows[s * split_stride + d]);
  for (int64_t dim = threadIdx.x; dim < d; dim += blockDim.x) {
    // −0 + x is x for every x (+0 + −0 is not): a query with one non-empty split gets the very
    // bits the kernel writes when it has one split, which batch-invariant launches rely on.
    float num = -0.0f, den = -0.0f;
    for (int64_t s = 0; s < splits; ++s) {
      const float* r = rows + s * split_stride;
      if (r[d + 1] == 0.0f) continue;
      const float w = expf(r[d] - m);
      num += w * r[dim];
      den += w * r[d + 1];
    }
    p.out[token * p.out_stride + head * d + dim] = num / den;
  }
}

// The kernel with accumulators for 4 query heads per kv head where that serves, else for 8.
template <typename T>
void Attend(dim3 grid, int64_t group, cudaStream_t stream, const PagedAttentionParams& p,
            const PagedAttentionLaunch& launch, const T* k_pool, const T* v_pool) {
  if (group <= 4) {
    AttentionKernel<T, 4><<<grid, kThreads, 0, stream>>>(p, launch, k_pool, v_pool);
  } else {
    AttentionKernel<T, 8><<<grid, kThreads, 0, stream>>>(p, launch, k_pool, v_pool);
  }
}

}  // namespace

int64_t PagedAttentionSplits(int64_t num_tokens, int64_t num_kv_heads, int64_t max_kv_len,
                             int multiprocessors) {
  const int64_t ctas = std::max<int64_t>(1, num_tokens * num_kv_heads);
  const int64_t target = 2 * int64_t{multiprocessors};
  if (ctas >= target) return 1;
  const int64_t tiles = (max_kv_len + kTile - 1) / kTile;
  return std::clamp<int64_t>((target + ctas - 1) / ctas, 1, std::max<int64_t>(1, tiles));
}

cudaError_t LaunchPagedAttention(const PagedAttentionParams& p, const PagedAttentionLaunch& launch,
                                 cudaStream_t stream) {
  if (launch.num_tokens == 0) return cudaSuccess;
  const int64_t kv_heads = p.cache.num_kv_heads, d = p.cache.head_dim;
  if (kv_heads <= 0 || p.num_heads % kv_heads != 0) return cudaErrorInvalidValue;
  const int64_t group = p.num_heads / kv_heads;
  if (group > kMaxGroup || d > kMaxHeadDim || d % kVec != 0 || kv_heads > 65535 ||
      launch.num_splits < 1 || launch.num_splits > 65535 || launch.split_keys < 0 ||
      launch.split_keys % kTile != 0 ||
      (TotalSplits(launch) > 1 && (launch.workspace == nullptr || p.num_heads > 65535))) {
    return cudaErrorInvalidValue;
  }
  if (launch.cascade.num_groups > 0) {
    if (const cudaError_t e = LaunchCascadePrefix(p, launch, stream); e != cudaSuccess) return e;
  }
  const dim3 grid(launch.num_tokens, kv_heads, launch.num_splits);
  if (!launch.block_kernel && WarpAttentionServes(d, group)) {
    if (const cudaError_t e = LaunchWarpAttention(grid, p, launch, stream); e != cudaSuccess) {
      return e;
    }
  } else if (p.cache.bf16()) {
    Attend(grid, group, stream, p, launch, p.cache.k_bf16, p.cache.v_bf16);
  } else {
    Attend(grid, group, stream, p, launch, p.cache.k, p.cache.v);
  }
  if (TotalSplits(launch) > 1) {
    CombineKernel<<<dim3(launch.num_tokens, p.num_heads), std::min<int64_t>(d, 256), 0, stream>>>(
        p, launch);
  }
  return cudaGetLastError();
}

}  // namespace arbor::kernels
