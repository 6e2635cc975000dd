#include <algorithm>
#include <atomic>
#include <cmath>

#include "kernels/paged_attention_cascade_cuda.h"
#include "kernels/paged_kv_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTile = 32;  // Prefix keys per shared-memory tile: one per lane when scoring.

__device__ float WarpMax(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float WarpSum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Shared memory: K tile [kTile][d + 1] (padded: lanes read different rows of one column), V tile
// [kTile][d], scores' exponentials [kWarps][kTile], then per pair: max, sum, output [d].
struct Smem {
  float* k;
  float* v;
  float* p;
  float* m;
  float* l;
  float* o;
};
__device__ Smem Carve(float* base, int d, int pairs) {
  Smem s;
  s.k = base;
  s.v = s.k + kTile * (d + 1);
  s.p = s.v + kTile * d;
  s.m = s.p + kWarps * kTile;
  s.l = s.m + pairs;
  s.o = s.l + pairs;
  return s;
}

// One CTA per (group, kv head, prefix split). Per tile of 32 prefix keys, loaded once: each warp
// takes (member, query head) pairs in turn — lane j scores key j, the warp updates the pair's
// online softmax, then lanes over head dims accumulate P·V into the pair's shared output row.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    CascadePrefixKernel(PagedAttentionParams p, PagedAttentionLaunch launch, const T* k_pool,
                        const T* v_pool) {
  extern __shared__ float smem[];
  const CascadeGroups& cg = launch.cascade;
  const int64_t g = blockIdx.x, kv_head = blockIdx.y, split = blockIdx.z;
  const PagedKvLayer& c = p.cache;
  const int group = static_cast<int>(p.num_heads / c.num_kv_heads);
  const int d = static_cast<int>(c.head_dim);
  const int64_t width = c.num_kv_heads * c.head_dim;
  const int first = cg.group_start[g], members = cg.group_start[g + 1] - first;
  const int pairs = members * group;
  const Smem s = Carve(smem, d, pairs);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t rep = cg.seq[g];
  // This split's keys: equal whole tiles of the prefix.
  const int64_t prefix = cg.prefix_len[g];
  const int64_t tiles = (prefix + kTile - 1) / kTile;
  const int64_t per_split = (tiles + cg.num_splits - 1) / cg.num_splits * kTile;
  const int64_t begin = min(prefix, split * per_split), end = min(prefix, begin + per_split);

  for (int i = threadIdx.x; i < pairs; i += kThreads) {
    s.m[i] = -INFINITY;
    s.l[i] = 0.0f;
  }
  for (int i = threadIdx.x; i < pairs * d; i += kThreads) s.o[i] = 0.0f;

  for (int64_t t0 = begin; t0 < end; t0 += kTile) {
    const int cnt = static_cast<int>(min(int64_t{kTile}, end - t0));
    __syncthreads();  // The previous tile is no longer read (and the state is initialised).
    for (int i = threadIdx.x; i < cnt * d; i += kThreads) {
      const int j = i / d, e = i % d;
      const int64_t slot = DevicePagedSlot(p.batch, c.block_size, rep, t0 + j);
      s.k[j * (d + 1) + e] = KvLoad(k_pool + slot * width + kv_head * d + e);
      s.v[j * d + e] = KvLoad(v_pool + slot * width + kv_head * d + e);
    }
    __syncthreads();
    float* pw = s.p + warp * kTile;
    for (int pair = warp; pair < pairs; pair += kWarps) {
      const int member = pair / group, head = kv_head * group + pair % group;
      const int64_t token = cg.tokens[first + member];
      const float* q = p.q + token * p.q_stride + head * d;
      float score = -INFINITY;
      if (lane < cnt) {
        float dot = 0.0f;
        for (int e = 0; e < d; ++e) dot += q[e] * s.k[lane * (d + 1) + e];
        score = dot * p.scale;
        if (p.last_scores != nullptr) {
          const int64_t seq = DeviceSeqOfToken(p.batch, token);
          float* out = p.last_scores[seq];
          if (out != nullptr && token == p.batch.q_start[seq + 1] - 1) {
            out[head * int64_t{p.batch.kv_len[seq]} + t0 + lane] = score;
          }
        }
      }
      const float m_old = s.m[pair];
      const float m_new = fmaxf(m_old, WarpMax(score));
      const float e = lane < cnt ? expf(score - m_new) : 0.0f;
      const float sum = WarpSum(e);
      const float alpha = expf(m_old - m_new);  // 0 while m_old is −inf.
      pw[lane] = e;
      __syncwarp();
      float* o = s.o + pair * d;
      for (int dim = lane; dim < d; dim += 32) {
        float acc = 0.0f;
        for (int j = 0; j < cnt; ++j) acc += pw[j] * s.v[j * d + dim];
        o[dim] = o[dim] * alpha + acc;
      }
      __syncwarp();  // pw is rewritten by the next pair; m_old was read by every lane.
      if (lane == 0) {
        s.m[pair] = m_new;
        s.l[pair] = s.l[pair] * alpha + sum;
      }
    }
  }
  __syncthreads();
  // Partial rows launch.num_splits + split of each member; an empty split carries (−inf, 0).
  const int64_t total = TotalSplits(launch), row_split = launch.num_splits + split;
  for (int i = threadIdx.x; i < pairs * (d + 2); i += kThreads) {
    const int pair = i / (d + 2), k = i % (d + 2);
    const int member = pair / group, head = kv_head * group + pair % group;
    const int64_t token = cg.tokens[first + member];
    const int64_t row = (token * total + row_split) * p.num_heads + head;
    const float value = k < d ? s.o[pair * d + k] : (k == d ? s.m[pair] : s.l[pair]);
    launch.workspace[row * (d + 2) + k] = value;
  }
}

// Raises the kernel's dynamic shared-memory limit when a launch needs more than any before: once
// per size, so the launches a CUDA graph captures make no attribute call.
template <typename T>
cudaError_t Launch(void (*kernel)(PagedAttentionParams, PagedAttentionLaunch, const T*, const T*),
                   dim3 grid, size_t bytes, cudaStream_t stream, const PagedAttentionParams& p,
                   const PagedAttentionLaunch& launch, const T* k_pool, const T* v_pool) {
  static std::atomic<size_t> allowed{48 << 10};
  if (bytes > allowed.load()) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(bytes));
    if (e != cudaSuccess) return e;
    allowed.store(bytes);
  }
  kernel<<<grid, kThreads, bytes, stream>>>(p, launch, k_pool, v_pool);
  return cudaGetLastError();
}

}  // namespace

int64_t CascadeSplits(int64_t num_groups, int64_t num_kv_heads, int64_t max_prefix_len,
                      int multiprocessors) {
  const int64_t ctas = std::max<int64_t>(1, num_groups * num_kv_heads);
  const int64_t tiles = std::max<int64_t>(1, (max_prefix_len + kTile - 1) / kTile);
  return std::clamp<int64_t>((2 * int64_t{multiprocessors} + ctas - 1) / ctas, 1, tiles);
}

cudaError_t LaunchCascadePrefix(const PagedAttentionParams& p, const PagedAttentionLaunch& launch,
                                cudaStream_t stream) {
  const CascadeGroups& cg = launch.cascade;
  const int64_t group = p.num_heads / p.cache.num_kv_heads, d = p.cache.head_dim;
  if (cg.num_groups <= 0 || cg.num_groups > 0x7fffffff || cg.num_splits < 1 ||
      cg.num_splits > 65535 || cg.max_members < 1 || cg.max_members > CascadeMaxMembers(group) ||
      launch.workspace == nullptr) {
    return cudaErrorInvalidValue;
  }
  const int64_t pairs = cg.max_members * group;
  const size_t bytes =
      sizeof(float) * (kTile * (d + 1) + kTile * d + kWarps * kTile + pairs * (d + 2));
  const dim3 grid(static_cast<unsigned>(cg.num_groups), p.cache.num_kv_heads, cg.num_splits);
  if (p.cache.bf16()) {
    return Launch(CascadePrefixKernel<uint16_t>, grid, bytes, stream, p, launch, p.cache.k_bf16,
                  p.cache.v_bf16);
  }
  return Launch(CascadePrefixKernel<float>, grid, bytes, stream, p, launch, p.cache.k, p.cache.v);
}

}  // namespace arbor::kernels
