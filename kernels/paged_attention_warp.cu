#include <cmath>

#include "kernels/paged_attention_query_cuda.h"
#include "kernels/paged_attention_warp_cuda.h"
#include "kernels/paged_kv_cuda.h"
#include "kernels/warp_reduce_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kKeys = 32;  // Keys per warp tile: one per lane.

// A lane's share of a V row, N consecutive pool elements as fp32 in one load (offsets are
// multiples of N elements, so the load is aligned).
__device__ inline void KvLoadLane(const float* x, float (&out)[2]) {
  const float2 a = *reinterpret_cast<const float2*>(x);
  out[0] = a.x, out[1] = a.y;
}
__device__ inline void KvLoadLane(const float* x, float (&out)[4]) {
  const float4 a = *reinterpret_cast<const float4*>(x);
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
}
__device__ inline void KvLoadLane(const uint16_t* x, float (&out)[2]) {
  const uint32_t w = *reinterpret_cast<const uint32_t*>(x);  // Little-endian: even element low.
  out[0] = __uint_as_float(w << 16), out[1] = __uint_as_float(w & 0xffff0000u);
}
__device__ inline void KvLoadLane(const uint16_t* x, float (&out)[4]) {
  const uint2 w = *reinterpret_cast<const uint2*>(x);
  out[0] = __uint_as_float(w.x << 16), out[1] = __uint_as_float(w.x & 0xffff0000u);
  out[2] = __uint_as_float(w.y << 16), out[3] = __uint_as_float(w.y & 0xffff0000u);
}

// The CTA's shared state: the group's queries, each warp's tile probabilities and slots, and
// each warp's softmax state and output for the final merge.
template <int kGroup, int kDim>
struct Shared {
  alignas(16) float q[kGroup][kDim];
  float p[kWarps][kGroup][kKeys];
  int64_t slot[kWarps][kKeys];
  float m[kWarps][kGroup];
  float l[kWarps][kGroup];
  float o[kWarps][kGroup][kDim];
};

// One warp's tile of keys from `t0` (at most kKeys): lane j scores key j for every head against
// the queries in `sh`, the online softmax moves each head's running maximum `m` and this lane's
// share of the sum `l`, and each lane accumulates P·V into its kDim / 32 output dims `acc`.
template <typename T, int kGroup, int kDim>
__device__ __forceinline__ void WarpTile(const PagedAttentionParams& p, Shared<kGroup, kDim>& sh,
                                         const T* k_pool, const T* v_pool, const QueryKeys& keys,
                                         int64_t kv_head, int group, int64_t t0, float (&m)[kGroup],
                                         float (&l)[kGroup], float (&acc)[kGroup][kDim / 32]) {
  constexpr int kChunks = kDim / 8, kLaneDims = kDim / 32;
  const int64_t width = p.cache.num_kv_heads * kDim;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int cnt = static_cast<int>(min(int64_t{kKeys}, keys.end - t0));
  const bool valid = lane < cnt;
  // Past the range a lane reads slot 0 (always in the pool) and its score is masked.
  const int64_t slot =
      valid ? DevicePagedSlot(p.batch, p.cache.block_size, keys.seq, t0 + lane) : 0;
  sh.slot[warp][lane] = slot;
  const T* k = k_pool + slot * width + kv_head * kDim;
  float dot[kGroup] = {};
#pragma unroll
  for (int ch = 0; ch < kChunks; ++ch) {
    float kv[8];
    KvLoad8(k + ch * 8, kv);
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      const float4 a = *reinterpret_cast<const float4*>(&sh.q[g][ch * 8]);
      const float4 b = *reinterpret_cast<const float4*>(&sh.q[g][ch * 8 + 4]);
      const float qv[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
      for (int e = 0; e < 8; ++e) dot[g] = fmaf(qv[e], kv[e], dot[g]);
    }
  }
  // Online softmax, head by head: the maximum is the warp's (so the rescale is uniform), the
  // sum stays per lane until the end.
#pragma unroll
  for (int g = 0; g < kGroup; ++g) {
    const float s = valid ? dot[g] * p.scale : -INFINITY;
    if (valid && keys.scores_out != nullptr && g < group) {
      keys.scores_out[(kv_head * group + g) * keys.n_keys + t0 + lane] = s;
    }
    const float m_new = fmaxf(m[g], WarpMax(s));  // Finite: lane 0 holds a key.
    const float alpha = expf(m[g] - m_new);       // 0 while m[g] is −inf.
    const float e = expf(s - m_new);              // 0 for masked lanes.
    l[g] = l[g] * alpha + e;
    m[g] = m_new;
#pragma unroll
    for (int dd = 0; dd < kLaneDims; ++dd) acc[g][dd] *= alpha;
    sh.p[warp][g][lane] = e;
  }
  __syncwarp();
  const T* v = v_pool + kv_head * kDim + lane * kLaneDims;
#pragma unroll 8
  for (int j = 0; j < cnt; ++j) {
    float vj[kLaneDims];
    KvLoadLane(v + sh.slot[warp][j] * width, vj);
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      const float pj = sh.p[warp][g][j];
#pragma unroll
      for (int dd = 0; dd < kLaneDims; ++dd) acc[g][dd] = fmaf(pj, vj[dd], acc[g][dd]);
    }
  }
  __syncwarp();  // The tile's probabilities and slots are rewritten by the next one.
}

// Merges the warps' states (in `sh`): each rescaled to the common maximum, warps that held no
// key weighing nothing; writes the output row, or with several splits this split's partial row
// and its (max, sum).
template <int kGroup, int kDim>
__device__ __forceinline__ void MergeWarps(const PagedAttentionParams& p,
                                           const PagedAttentionLaunch& launch,
                                           const Shared<kGroup, kDim>& sh, int64_t token,
                                           int64_t split, int64_t kv_head, int group) {
  const int64_t total_splits = TotalSplits(launch);
  for (int i = threadIdx.x; i < group * kDim; i += kThreads) {
    const int g = i / kDim, dim = i % kDim;
    float mx = -INFINITY;
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, sh.m[w][g]);
    float num = 0.0f, den = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      if (sh.m[w][g] == -INFINITY) continue;
      const float weight = expf(sh.m[w][g] - mx);
      num += weight * sh.o[w][g][dim];
      den += weight * sh.l[w][g];
    }
    const int64_t head = kv_head * group + g;
    if (total_splits == 1) {
      p.out[token * p.out_stride + head * kDim + dim] = num / den;
    } else {  // This split's partial row; an empty split carries (−inf, 0).
      float* row =
          launch.workspace + ((token * total_splits + split) * p.num_heads + head) * (kDim + 2);
      row[dim] = num;
      if (dim == 0) row[kDim] = mx, row[kDim + 1] = den;
    }
  }
}

// T: the pools' element type (float, or uint16_t for bf16). kGroup: query heads per kv head the
// accumulators are sized for (group ≤ kGroup; heads past group score a zero query). Lane j of a
// warp scores key j of the warp's tile for every head, 16-byte loads of its K row against the
// queries read from shared memory; then each lane owns kDim / 32 consecutive output dims and
// accumulates P·V over the tile's keys. Query `token`'s keys of `split` (its own keys only, under
// cascade) are the warps' in turn, 32 at a time.
template <typename T, int kGroup, int kDim>
__global__ void __launch_bounds__(kThreads)
    WarpAttentionKernel(PagedAttentionParams p, PagedAttentionLaunch launch, const T* k_pool,
                        const T* v_pool) {
  constexpr int kLaneDims = kDim / 32;
  __shared__ Shared<kGroup, kDim> sh;
  const int64_t token = blockIdx.x, kv_head = blockIdx.y, split = blockIdx.z;
  const int group = static_cast<int>(p.num_heads / p.cache.num_kv_heads);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const QueryKeys keys = QueryKeysOf(p, launch, token, split);
  const float* q = p.q + token * p.q_stride + kv_head * group * kDim;
  for (int i = threadIdx.x; i < kGroup * kDim; i += kThreads) {
    sh.q[i / kDim][i % kDim] = i < group * kDim ? q[i] : 0.0f;
  }
  __syncthreads();

  float m[kGroup], l[kGroup], acc[kGroup][kLaneDims] = {};  // l: this lane's share of the sum.
#pragma unroll
  for (int g = 0; g < kGroup; ++g) m[g] = -INFINITY, l[g] = 0.0f;
  for (int64_t t0 = keys.begin + int64_t{warp} * kKeys; t0 < keys.end; t0 += kWarps * kKeys) {
    WarpTile<T, kGroup, kDim>(p, sh, k_pool, v_pool, keys, kv_head, group, t0, m, l, acc);
  }

  // Each warp's state into shared memory for the merge.
#pragma unroll
  for (int g = 0; g < kGroup; ++g) {
    const float sum = WarpSum(l[g]);
    if (lane == 0) sh.m[warp][g] = m[g], sh.l[warp][g] = sum;
#pragma unroll
    for (int dd = 0; dd < kLaneDims; ++dd) sh.o[warp][g][lane * kLaneDims + dd] = acc[g][dd];
  }
  __syncthreads();
  MergeWarps<kGroup, kDim>(p, launch, sh, token, split, kv_head, group);
}

template <typename T, int kGroup>
cudaError_t LaunchFor(dim3 grid, const PagedAttentionParams& p, const PagedAttentionLaunch& launch,
                      cudaStream_t stream, const T* k_pool, const T* v_pool) {
  if (p.cache.head_dim == 64) {
    WarpAttentionKernel<T, kGroup, 64><<<grid, kThreads, 0, stream>>>(p, launch, k_pool, v_pool);
  } else {
    WarpAttentionKernel<T, kGroup, 128><<<grid, kThreads, 0, stream>>>(p, launch, k_pool, v_pool);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchForGroup(dim3 grid, const PagedAttentionParams& p,
                           const PagedAttentionLaunch& launch, cudaStream_t stream, const T* k_pool,
                           const T* v_pool) {
  if (p.num_heads / p.cache.num_kv_heads <= 4) {
    return LaunchFor<T, 4>(grid, p, launch, stream, k_pool, v_pool);
  }
  return LaunchFor<T, 8>(grid, p, launch, stream, k_pool, v_pool);
}

}  // namespace

bool WarpAttentionServes(int64_t head_dim, int64_t group) {
  return (head_dim == 64 || head_dim == 128) && group >= 1 && group <= 8;
}

cudaError_t LaunchWarpAttention(dim3 grid, const PagedAttentionParams& p,
                                const PagedAttentionLaunch& launch, cudaStream_t stream) {
  if (!WarpAttentionServes(p.cache.head_dim, p.num_heads / p.cache.num_kv_heads)) {
    return cudaErrorInvalidValue;
  }
  if (p.cache.bf16()) {
    return LaunchForGroup(grid, p, launch, stream, p.cache.k_bf16, p.cache.v_bf16);
  }
  return LaunchForGroup(grid, p, launch, stream, p.cache.k, p.cache.v);
}

}  // namespace arbor::kernels
