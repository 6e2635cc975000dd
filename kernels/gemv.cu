#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/gemv_cuda.h"
#include "kernels/stream_load_cuda.h"
#include "kernels/warp_reduce_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kWarps = 4;  // Per CTA: small CTAs spread a short matrix over every SM.
constexpr int kThreads = kWarps * 32;
constexpr int kUnroll = 4;  // Chunks per lane and weight row whose loads are issued together.

// The two bf16 halves of a 32-bit word, exactly widened (bf16 is fp32's upper half).
__device__ __forceinline__ float Low(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float High(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

// acc + Σ_j w[j]·x[j] over one chunk of 8 (x = a, b), in one fixed order.
__device__ __forceinline__ float Dot8(uint4 w, float4 a, float4 b, float acc) {
  acc = fmaf(Low(w.x), a.x, acc);
  acc = fmaf(High(w.x), a.y, acc);
  acc = fmaf(Low(w.y), a.z, acc);
  acc = fmaf(High(w.y), a.w, acc);
  acc = fmaf(Low(w.z), b.x, acc);
  acc = fmaf(High(w.z), b.y, acc);
  acc = fmaf(Low(w.w), b.z, acc);
  acc = fmaf(High(w.w), b.w, acc);
  return acc;
}

__device__ __forceinline__ float SumSquares8(float4 a, float4 b, float acc) {
  acc = fmaf(a.x, a.x, acc);
  acc = fmaf(a.y, a.y, acc);
  acc = fmaf(a.z, a.z, acc);
  acc = fmaf(a.w, a.w, acc);
  acc = fmaf(b.x, b.x, acc);
  acc = fmaf(b.y, b.y, acc);
  acc = fmaf(b.z, b.z, acc);
  acc = fmaf(b.w, b.w, acc);
  return acc;
}

__device__ __forceinline__ float4 Scale(float4 a, float4 g) {
  return make_float4(a.x * g.x, a.y * g.y, a.z * g.z, a.w * g.w);
}

// M x rows, R weight rows per warp. Lane l takes chunks l, l + 32, l + 64, ... of every row in
// increasing order, so each output's sum has the same order whatever M and R are.
template <int M, int R>
__global__ void __launch_bounds__(kThreads) GemvBf16Kernel(GemvParams p) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t first = (int64_t{blockIdx.x} * kWarps + warp) * R;
  if (first >= p.n) return;
  const float* x[M];
#pragma unroll
  for (int i = 0; i < M; ++i) x[i] = p.x + (p.rows != nullptr ? p.rows[i] : i) * p.x_stride;
  const uint4* w[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    // Rows past n re-read the last row (in bounds); their sums are never written.
    w[r] = reinterpret_cast<const uint4*>(p.w + min(first + r, p.n - 1) * p.k);
  }
  float acc[R][M];
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int i = 0; i < M; ++i) acc[r][i] = 0.0f;
  }
  float squares[M];  // Per x row: this lane's Σ x², when normalising.
#pragma unroll
  for (int i = 0; i < M; ++i) squares[i] = 0.0f;
  const float4* g = reinterpret_cast<const float4*>(p.norm_weight);
  const int64_t chunks = p.k / 8;
  for (int64_t base = lane; base < chunks; base += 32 * kUnroll) {
    uint4 wv[kUnroll][R];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t c = base + u * 32;
#pragma unroll
      for (int r = 0; r < R; ++r) wv[u][r] = c < chunks ? LoadOnce(w[r] + c) : uint4{};
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t c = base + u * 32;
      if (c >= chunks) break;
      float4 ga, gb;
      if (g != nullptr) ga = __ldg(g + 2 * c), gb = __ldg(g + 2 * c + 1);
#pragma unroll
      for (int i = 0; i < M; ++i) {
        const float4* xc = reinterpret_cast<const float4*>(x[i] + c * 8);
        float4 a = __ldg(xc), b = __ldg(xc + 1);
        if (g != nullptr) {
          squares[i] = SumSquares8(a, b, squares[i]);
          a = Scale(a, ga), b = Scale(b, gb);
        }
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r][i] = Dot8(wv[u][r], a, b, acc[r][i]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int i = 0; i < M; ++i) acc[r][i] = WarpSum(acc[r][i]);
  }
  if (g != nullptr) {
    // Σ_j w_j·g_j·x_j scaled once by the row's 1/rms: the normalised row, never stored.
#pragma unroll
    for (int i = 0; i < M; ++i) {
      const float inv_rms =
          1.0f / sqrtf(WarpSum(squares[i]) / static_cast<float>(p.k) + p.norm_eps);
#pragma unroll
      for (int r = 0; r < R; ++r) acc[r][i] *= inv_rms;
    }
  }
  if (lane != 0) return;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    if (first + r >= p.n) break;
#pragma unroll
    for (int i = 0; i < M; ++i) {
      float* o = p.out + i * p.out_stride + first + r;
      *o = p.accumulate ? *o + acc[r][i] : acc[r][i];
    }
  }
}

// Two weight rows per warp for one or two x rows (more CTAs for short matrices); four beyond,
// where re-reading the x rows from L1 for every weight row would cost more than the weights.
template <int M>
cudaError_t Launch(const GemvParams& p, cudaStream_t stream) {
  constexpr int kRowsPerWarp = M <= 2 ? 2 : 4;
  const int64_t ctas = (p.n + kWarps * kRowsPerWarp - 1) / (kWarps * kRowsPerWarp);
  if (ctas > 0x7fffffff) return cudaErrorInvalidValue;
  GemvBf16Kernel<M, kRowsPerWarp><<<static_cast<unsigned>(ctas), kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

bool GemvServes(const GemvParams& p) {
  const auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  return p.m >= 1 && p.m <= kGemvMaxRows && p.n >= 1 && p.k >= 8 && p.k % 8 == 0 &&
         p.x_stride >= p.k && p.x_stride % 4 == 0 && p.out_stride >= p.n && p.x != nullptr &&
         p.w != nullptr && p.out != nullptr && aligned(p.x) && aligned(p.w) &&
         aligned(p.norm_weight);
}

cudaError_t LaunchGemvBf16(const GemvParams& p, cudaStream_t stream) {
  if (!GemvServes(p)) return cudaErrorInvalidValue;
  switch (p.m) {
    case 1:
      return Launch<1>(p, stream);
    case 2:
      return Launch<2>(p, stream);
    case 3:
      return Launch<3>(p, stream);
    case 4:
      return Launch<4>(p, stream);
    case 5:
      return Launch<5>(p, stream);
    case 6:
      return Launch<6>(p, stream);
    case 7:
      return Launch<7>(p, stream);
    default:
      return Launch<8>(p, stream);
  }
}

}  // namespace arbor::kernels
