#include <algorithm>
#include <atomic>
#include <cmath>

#include "kernels/paged_attention_cascade_cuda.h"
#include "kernels/paged_kv_cuda.h"
#include "kernels/warp_reduce_cuda.h"

namespace arbor::kernels {
namespace {

// A CTA's 256 threads in 32 teams of 8 lanes (one team never spans two warps). Team `ty` owns
// (member, query head) pairs 4·ty … 4·ty + 3 — CascadeMaxMembers keeps a group within the 128
// pairs — and within a team lane `tx` scores keys 4·tx … 4·tx + 3 of each 32-key tile and owns
// output dims tx, tx + 8, tx + 16, … of its pairs. So the tile's scores are a register-tiled
// 4 × 4 product per thread over shared memory read 16 bytes at a time, and each pair's output
// accumulates in registers across the whole prefix.
constexpr int kThreads = 256;
constexpr int kTeamLanes = 8;
constexpr int kPairsPerLane = 4;
constexpr int kPairs = kThreads / kTeamLanes * kPairsPerLane;  // 128.
constexpr int kTile = kTeamLanes * 4;                          // 32 keys.
constexpr int kPStride = kPairs + 4;  // A row of P^T: 16-byte aligned, staggered banks.

// Shared memory, in floats: queries transposed [d][kPairs]; the tile's keys transposed
// [d][kTile]; its values [kTile][d + 4] (the pad spreads one key's 16-byte writes over the
// banks); the team's probabilities transposed [kTile][kPStride].
__host__ __device__ inline int64_t SmemFloats(int64_t d) {
  return d * kPairs + d * kTile + kTile * (d + 4) + kTile * kPStride;
}
struct Smem {
  float* qt;
  float* kt;
  float* v;
  float* pt;
};
__device__ Smem Carve(float* base, int d) {
  Smem s;
  s.qt = base;
  s.kt = s.qt + d * kPairs;
  s.v = s.kt + d * kTile;
  s.pt = s.v + kTile * (d + 4);
  return s;
}

// The group's pairs, from the CTA's kv head.
struct Pairs {
  const CascadeGroups* cg;
  int first, count, group;
  int64_t kv_head;
  __device__ int64_t token(int pair) const { return cg->tokens[first + pair / group]; }
  __device__ int64_t head(int pair) const { return kv_head * group + pair % group; }
};

// Every pair's query, transposed; pairs past the group's stay zero.
__device__ void StageQueries(const PagedAttentionParams& p, const Pairs& pairs, float* qt) {
  const int d = static_cast<int>(p.cache.head_dim);
  for (int i = threadIdx.x; i < d * kPairs; i += kThreads) {
    const int pair = i % kPairs, e = i / kPairs;
    qt[i] =
        pair < pairs.count ? p.q[pairs.token(pair) * p.q_stride + pairs.head(pair) * d + e] : 0.0f;
  }
}

// Keys t0 … t0 + cnt − 1 of the prefix (block table of sequence `rep`): K transposed, V by row.
// A warp's lanes take one key each, 8 dims per 16-byte load.
template <typename T>
__device__ void LoadTile(const PagedAttentionParams& p, const T* k_pool, const T* v_pool,
                         int64_t rep, int64_t kv_head, int64_t t0, int cnt, const Smem& s) {
  const int d = static_cast<int>(p.cache.head_dim);
  const int64_t width = p.cache.num_kv_heads * p.cache.head_dim;
  for (int i = threadIdx.x; i < kTile * (d / 8); i += kThreads) {
    const int j = i % kTile, chunk = i / kTile;
    if (j >= cnt) continue;
    const int64_t at =
        DevicePagedSlot(p.batch, p.cache.block_size, rep, t0 + j) * width + kv_head * d + chunk * 8;
    float k[8], v[8];
    KvLoad8(k_pool + at, k);
    KvLoad8(v_pool + at, v);
#pragma unroll
    for (int u = 0; u < 8; ++u) s.kt[(chunk * 8 + u) * kTile + j] = k[u];
    float4* row = reinterpret_cast<float4*>(s.v + j * (d + 4) + chunk * 8);
    row[0] = make_float4(v[0], v[1], v[2], v[3]);
    row[1] = make_float4(v[4], v[5], v[6], v[7]);
  }
}

// Where each of a lane's pairs writes its prefix keys' scaled scores (its sequence's last query,
// on the layer that asks for them), or null.
__device__ void ScoreRows(const PagedAttentionParams& p, const Pairs& pairs, int ty,
                          float* (&out)[kPairsPerLane]) {
#pragma unroll
  for (int i = 0; i < kPairsPerLane; ++i) {
    out[i] = nullptr;
    const int pair = ty * kPairsPerLane + i;
    if (p.last_scores == nullptr || pair >= pairs.count) continue;
    const int64_t token = pairs.token(pair), seq = DeviceSeqOfToken(p.batch, token);
    float* rows = p.last_scores[seq];
    if (rows != nullptr && token == p.batch.q_start[seq + 1] - 1) {
      out[i] = rows + pairs.head(pair) * int64_t{p.batch.kv_len[seq]};
    }
  }
}

// The tile's probabilities for this lane's pairs (pair ty·kPairsPerLane + i, keys tx·4 .. +3):
// the scores q·k × scale (also to the pair's score row when it has one), the online softmax
// moving each pair's running maximum `m` and sum `l` and rescaling its output `o`, and the
// probabilities into s.pt for the team's P·V.
template <int kMaxChunks>
__device__ __forceinline__ void TileProbabilities(const PagedAttentionParams& p, const Smem& s,
                                                  float* const (&score_rows)[kPairsPerLane],
                                                  int64_t t0, int cnt, int d,
                                                  float (&m)[kPairsPerLane],
                                                  float (&l)[kPairsPerLane],
                                                  float (&o)[kPairsPerLane][kMaxChunks]) {
  const int ty = threadIdx.x / kTeamLanes, tx = threadIdx.x % kTeamLanes;
  float sc[kPairsPerLane][4] = {};
  for (int e = 0; e < d; ++e) {
    const float4 q4 = reinterpret_cast<const float4*>(s.qt + e * kPairs)[ty];
    const float4 k4 = reinterpret_cast<const float4*>(s.kt + e * kTile)[tx];
    const float q[4] = {q4.x, q4.y, q4.z, q4.w}, k[4] = {k4.x, k4.y, k4.z, k4.w};
#pragma unroll
    for (int i = 0; i < kPairsPerLane; ++i) {
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) sc[i][jj] = fmaf(q[i], k[jj], sc[i][jj]);
    }
  }
  // Online softmax per pair, the team's 8 lanes holding the tile's 32 keys between them.
#pragma unroll
  for (int i = 0; i < kPairsPerLane; ++i) {
    float tile_max = -INFINITY;
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      const int key = tx * 4 + jj;
      sc[i][jj] = key < cnt ? sc[i][jj] * p.scale : -INFINITY;
      if (key < cnt && score_rows[i] != nullptr) score_rows[i][t0 + key] = sc[i][jj];
      tile_max = fmaxf(tile_max, sc[i][jj]);
    }
    const float m_new =
        fmaxf(m[i], WarpMax<kTeamLanes>(tile_max));  // Finite: key 0 is in every tile.
    const float alpha = expf(m[i] - m_new);          // 0 while m[i] is −inf.
    float sum = 0.0f;
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      sc[i][jj] = expf(sc[i][jj] - m_new);
      sum += sc[i][jj];
    }
    l[i] = l[i] * alpha + WarpSum<kTeamLanes>(sum);
    m[i] = m_new;
#pragma unroll
    for (int cc = 0; cc < kMaxChunks; ++cc) o[i][cc] *= alpha;
  }
#pragma unroll
  for (int jj = 0; jj < 4; ++jj) {
    reinterpret_cast<float4*>(s.pt + (tx * 4 + jj) * kPStride)[ty] =
        make_float4(sc[0][jj], sc[1][jj], sc[2][jj], sc[3][jj]);
  }
}

// This lane's pairs' partial rows, launch.num_splits + split of each member; an empty split
// carries (−inf, 0).
template <int kMaxChunks>
__device__ __forceinline__ void WritePartialRows(const PagedAttentionParams& p,
                                                 const PagedAttentionLaunch& launch,
                                                 const Pairs& pairs, int64_t split, int d,
                                                 const float (&m)[kPairsPerLane],
                                                 const float (&l)[kPairsPerLane],
                                                 const float (&o)[kPairsPerLane][kMaxChunks]) {
  const int ty = threadIdx.x / kTeamLanes, tx = threadIdx.x % kTeamLanes;
  const int chunks = d / kTeamLanes;
  const int64_t total = TotalSplits(launch), row_split = launch.num_splits + split;
#pragma unroll
  for (int i = 0; i < kPairsPerLane; ++i) {
    const int pair = ty * kPairsPerLane + i;
    if (pair >= pairs.count) continue;
    const int64_t row = (pairs.token(pair) * total + row_split) * p.num_heads + pairs.head(pair);
    float* w = launch.workspace + row * (d + 2);
#pragma unroll
    for (int cc = 0; cc < kMaxChunks; ++cc) {
      if (cc < chunks) w[tx + cc * kTeamLanes] = o[i][cc];
    }
    if (tx == 0) w[d] = m[i], w[d + 1] = l[i];
  }
}

// One CTA per (group, kv head, prefix split): per tile of 32 prefix keys, loaded once, every
// pair's scores, their online softmax and P·V.
template <typename T, int kMaxChunks>
__global__ void __launch_bounds__(kThreads)
    CascadePrefixKernel(PagedAttentionParams p, PagedAttentionLaunch launch, const T* k_pool,
                        const T* v_pool) {
  extern __shared__ float4 smem4[];  // float4: the carve's 16-byte reads need the alignment.
  const CascadeGroups& cg = launch.cascade;
  const int64_t g = blockIdx.x, kv_head = blockIdx.y, split = blockIdx.z;
  const int d = static_cast<int>(p.cache.head_dim), chunks = d / kTeamLanes;
  const int group = static_cast<int>(p.num_heads / p.cache.num_kv_heads);
  const Pairs pairs{&cg, cg.group_start[g], (cg.group_start[g + 1] - cg.group_start[g]) * group,
                    group, kv_head};
  const Smem s = Carve(reinterpret_cast<float*>(smem4), d);
  const int ty = threadIdx.x / kTeamLanes, tx = threadIdx.x % kTeamLanes;
  // This split's keys: equal whole tiles of the prefix.
  const int64_t prefix = cg.prefix_len[g];
  const int64_t tiles = (prefix + kTile - 1) / kTile;
  const int64_t per_split = (tiles + cg.num_splits - 1) / cg.num_splits * kTile;
  const int64_t begin = min(prefix, split * per_split), end = min(prefix, begin + per_split);

  StageQueries(p, pairs, s.qt);
  float* score_rows[kPairsPerLane];
  ScoreRows(p, pairs, ty, score_rows);
  float o[kPairsPerLane][kMaxChunks] = {};
  float m[kPairsPerLane], l[kPairsPerLane];
#pragma unroll
  for (int i = 0; i < kPairsPerLane; ++i) m[i] = -INFINITY, l[i] = 0.0f;

  for (int64_t t0 = begin; t0 < end; t0 += kTile) {
    const int cnt = static_cast<int>(min(int64_t{kTile}, end - t0));
    __syncthreads();  // The previous tile is no longer read (and the queries are staged).
    LoadTile(p, k_pool, v_pool, cg.seq[g], kv_head, t0, cnt, s);
    __syncthreads();
    TileProbabilities<kMaxChunks>(p, s, score_rows, t0, cnt, d, m, l, o);
    __syncwarp();  // The team's probabilities, written by its 8 lanes of this warp.
    for (int j = 0; j < cnt; ++j) {
      const float4 p4 = reinterpret_cast<const float4*>(s.pt + j * kPStride)[ty];
      const float pj[4] = {p4.x, p4.y, p4.z, p4.w};
      const float* v = s.v + j * (d + 4) + tx;
#pragma unroll
      for (int cc = 0; cc < kMaxChunks; ++cc) {
        if (cc >= chunks) break;
        const float vj = v[cc * kTeamLanes];
#pragma unroll
        for (int i = 0; i < kPairsPerLane; ++i) o[i][cc] = fmaf(pj[i], vj, o[i][cc]);
      }
    }
  }
  WritePartialRows<kMaxChunks>(p, launch, pairs, split, d, m, l, o);
}

// Raises the kernel's dynamic shared-memory limit when a launch needs more than any before: once
// per size, so the launches a CUDA graph captures make no attribute call.
template <typename T, int kMaxChunks>
cudaError_t Launch(dim3 grid, cudaStream_t stream, const PagedAttentionParams& p,
                   const PagedAttentionLaunch& launch, const T* k_pool, const T* v_pool) {
  static std::atomic<size_t> allowed{48 << 10};
  const size_t bytes = sizeof(float) * SmemFloats(p.cache.head_dim);
  auto* kernel = CascadePrefixKernel<T, kMaxChunks>;
  if (bytes > allowed.load()) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(bytes));
    if (e != cudaSuccess) return e;
    allowed.store(bytes);
  }
  kernel<<<grid, kThreads, bytes, stream>>>(p, launch, k_pool, v_pool);
  return cudaGetLastError();
}

// The instance whose output registers cover head_dim / 8 dims per lane.
template <typename T>
cudaError_t LaunchForHeadDim(dim3 grid, cudaStream_t stream, const PagedAttentionParams& p,
                             const PagedAttentionLaunch& launch, const T* k_pool, const T* v_pool) {
  const int64_t chunks = p.cache.head_dim / kTeamLanes;
  if (chunks <= 4) return Launch<T, 4>(grid, stream, p, launch, k_pool, v_pool);
  if (chunks <= 8) return Launch<T, 8>(grid, stream, p, launch, k_pool, v_pool);
  if (chunks <= 16) return Launch<T, 16>(grid, stream, p, launch, k_pool, v_pool);
  return Launch<T, 32>(grid, stream, p, launch, k_pool, v_pool);
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
  static_assert(kPairs == kCascadeMaxPairs);
  const CascadeGroups& cg = launch.cascade;
  const int64_t group = p.num_heads / p.cache.num_kv_heads, d = p.cache.head_dim;
  if (cg.num_groups <= 0 || cg.num_groups > 0x7fffffff || cg.num_splits < 1 ||
      cg.num_splits > 65535 || cg.max_members < 1 || cg.max_members > CascadeMaxMembers(group) ||
      d % 8 != 0 || d > 256 || launch.workspace == nullptr) {
    return cudaErrorInvalidValue;
  }
  const dim3 grid(static_cast<unsigned>(cg.num_groups), p.cache.num_kv_heads, cg.num_splits);
  if (p.cache.bf16()) {
    return LaunchForHeadDim(grid, stream, p, launch, p.cache.k_bf16, p.cache.v_bf16);
  }
  return LaunchForHeadDim(grid, stream, p, launch, p.cache.k, p.cache.v);
}

}  // namespace arbor::kernels
