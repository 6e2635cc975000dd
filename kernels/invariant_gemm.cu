#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/invariant_gemm_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kKWarps = kInvariantGemmKWarps;
constexpr int kThreads = kKWarps * 32;
constexpr int64_t kChunk = kInvariantGemmChunk;
constexpr int kUnroll = 2;  // Chunks per warp whose loads are issued before their products.

// Weights are read once per launch and row tile: bypass L1, as the GEMV does (gemv.cu).
__device__ __forceinline__ uint4 LoadWeights(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

// d += a·b on one m16n8k16 tile, bf16 operands, fp32 accumulators (PTX fragment layouts: a0/a2
// row g = lane / 4 and a1/a3 row g + 8, columns 2q, 2q + 1 (a0, a1) and 2q + 8, 2q + 9 (a2, a3)
// with q = lane % 4; b0 k rows 2q, 2q + 1 and b1 2q + 8, 2q + 9 of column g; d0, d1 row g and
// d2, d3 row g + 8, columns 2q, 2q + 1).
__device__ __forceinline__ void Mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                    uint32_t a3, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t Word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

// The products of one chunk: lane (g, q) holds k = 8q … 8q + 7 of the chunk for weight rows g and
// g + 8 of each feature tile (lo, hi) and for activation row g of each row tile. Step s feeds
// words 2s and 2s + 1, so the mma's k columns 2q + j and 2q + 8 + j are the chunk's
// 8q + 4s + j and 8q + 4s + 2 + j on both operands.
template <int FT, int TT>
__device__ __forceinline__ void ChunkProducts(float (&acc)[FT][TT][4], const uint4 (&lo)[FT],
                                              const uint4 (&hi)[FT], const uint4 (&x)[TT]) {
#pragma unroll
  for (int s = 0; s < 2; ++s) {
#pragma unroll
    for (int f = 0; f < FT; ++f) {
#pragma unroll
      for (int t = 0; t < TT; ++t) {
        Mma(acc[f][t], Word(lo[f], 2 * s), Word(hi[f], 2 * s), Word(lo[f], 2 * s + 1),
            Word(hi[f], 2 * s + 1), Word(x[t], 2 * s), Word(x[t], 2 * s + 1));
      }
    }
  }
}

// A CTA computes FT tiles of 16 weight rows × TT tiles of 8 activation rows; its kKWarps warps
// take the k chunks in turn (chunk c to warp c mod kKWarps) and sum their partials in warp order.
template <int FT, int TT>
__global__ void __launch_bounds__(kThreads) InvariantGemmKernel(InvariantGemmParams p) {
  constexpr int kAcc = FT * TT * 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;
  const int64_t n0 = int64_t{blockIdx.x} * 16 * FT, m0 = int64_t{blockIdx.y} * 8 * TT;
  // Each row's 16-byte piece q of chunk 0; chunk c is 4·c pieces on. Weight rows past n re-read
  // the last one and activation rows past m read zeros: their sums are never written.
  const uint4* w_lo[FT];
  const uint4* w_hi[FT];
#pragma unroll
  for (int f = 0; f < FT; ++f) {
    const int64_t row = n0 + f * 16 + g;
    w_lo[f] = reinterpret_cast<const uint4*>(p.w + min(row, p.n - 1) * p.k) + q;
    w_hi[f] = reinterpret_cast<const uint4*>(p.w + min(row + 8, p.n - 1) * p.k) + q;
  }
  const uint4* x_row[TT];
#pragma unroll
  for (int t = 0; t < TT; ++t) {
    const int64_t row = m0 + t * 8 + g;
    x_row[t] = row < p.m ? reinterpret_cast<const uint4*>(p.x + row * p.x_stride) + q : nullptr;
  }
  float acc[FT][TT][4] = {};
  // A last chunk of k mod 32 (8, 16 or 24) is a whole one whose lanes past k read zeros.
  const int64_t chunks = (p.k + kChunk - 1) / kChunk;
  for (int64_t base = warp; base < chunks; base += kKWarps * kUnroll) {
    uint4 lo[kUnroll][FT], hi[kUnroll][FT], x[kUnroll][TT];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t c = base + u * kKWarps;
      const bool in = c < chunks && c * kChunk + q * 8 < p.k;
#pragma unroll
      for (int f = 0; f < FT; ++f) {
        lo[u][f] = in ? LoadWeights(w_lo[f] + 4 * c) : uint4{};
        hi[u][f] = in ? LoadWeights(w_hi[f] + 4 * c) : uint4{};
      }
#pragma unroll
      for (int t = 0; t < TT; ++t) x[u][t] = in && x_row[t] ? __ldg(x_row[t] + 4 * c) : uint4{};
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * kKWarps >= chunks) break;  // Uniform over the warp.
      ChunkProducts<FT, TT>(acc, lo[u], hi[u], x[u]);
    }
  }
  // Partials lane-fastest (conflict-free), then each (element, lane) summed over warps in order.
  __shared__ float partial[kKWarps][kAcc][32];
#pragma unroll
  for (int f = 0; f < FT; ++f) {
#pragma unroll
    for (int t = 0; t < TT; ++t) {
#pragma unroll
      for (int r = 0; r < 4; ++r) partial[warp][(f * TT + t) * 4 + r][lane] = acc[f][t][r];
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kAcc * 32; i += kThreads) {
    const int e = i / 32, l = i % 32;
    float sum = partial[0][e][l];
#pragma unroll
    for (int w = 1; w < kKWarps; ++w) sum += partial[w][e][l];
    const int f = e / (TT * 4), t = e / 4 % TT, r = e % 4;
    const int64_t feature = n0 + f * 16 + l / 4 + (r >= 2 ? 8 : 0);
    const int64_t row = m0 + t * 8 + (l % 4) * 2 + r % 2;
    if (feature < p.n && row < p.m) p.out[row * p.out_stride + feature] = sum;
  }
}

template <int FT, int TT>
cudaError_t Launch(const InvariantGemmParams& p, cudaStream_t stream) {
  const int64_t ctas_n = (p.n + 16 * FT - 1) / (16 * FT);
  const int64_t ctas_m = (p.m + 8 * TT - 1) / (8 * TT);
  if (ctas_n > 0x7fffffff || ctas_m > 65535) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(ctas_n), static_cast<unsigned>(ctas_m));
  InvariantGemmKernel<FT, TT><<<grid, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

bool InvariantGemmServes(const InvariantGemmParams& p) {
  const auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  return p.m >= 1 && p.n >= 1 && p.k >= 8 && p.k % 8 == 0 && p.x_stride >= p.k &&
         p.x_stride % 8 == 0 && p.out_stride >= p.n && p.x != nullptr && p.w != nullptr &&
         p.out != nullptr && aligned(p.x) && aligned(p.w);
}

// Tiles by row count: one 16 × 8 tile per CTA for decode rows (the most CTAs over the weights),
// wider row tiles up to 32 rows (each weight fragment feeds more products), 32 × 32 beyond.
cudaError_t LaunchInvariantGemmBf16(const InvariantGemmParams& p, cudaStream_t stream) {
  if (!InvariantGemmServes(p)) return cudaErrorInvalidValue;
  if (p.m <= 8) return Launch<1, 1>(p, stream);
  if (p.m <= 16) return Launch<1, 2>(p, stream);
  if (p.m <= 32) return Launch<1, 4>(p, stream);
  return Launch<2, 4>(p, stream);
}

}  // namespace arbor::kernels
