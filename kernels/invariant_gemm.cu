#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/invariant_gemm_cuda.h"
#include "kernels/quant/quant_chunks.h"
#include "kernels/stream_load_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kKWarps = kInvariantGemmKWarps;
constexpr int kThreads = kKWarps * 32;
constexpr int64_t kChunk = kInvariantGemmChunk;
constexpr int kUnroll = 2;  // Chunks per warp whose loads are issued before their products.

// The weight loaders: Load(row, c, q) gives weights 8q … 8q + 7 of chunk c of weight row `row`
// as four words of two bf16 each (lower k in the low half).
struct Bf16Rows {
  const uint16_t* w;
  int64_t k;
  __device__ __forceinline__ uint4 Load(int64_t row, int64_t c, int q) const {
    return LoadOnce(reinterpret_cast<const uint4*>(w + row * k) + 4 * c + q);
  }
};

__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) {
  return uint32_t{__bfloat16_as_ushort(__float2bfloat16_rn(lo))} |
         uint32_t{__bfloat16_as_ushort(__float2bfloat16_rn(hi))} << 16;
}

// 8 fp32 activations as bf16 pairs, rounded to nearest even as the staging narrowing of the
// cuBLASLt path rounds them (matmul.cu).
__device__ __forceinline__ uint4 LoadActivations(const float4* p) {
  const float4 a = __ldg(p), b = __ldg(p + 1);
  return {PackBf16(a.x, a.y), PackBf16(a.z, a.w), PackBf16(b.x, b.y), PackBf16(b.z, b.w)};
}

// GGUF blocks widened in registers through quant_chunks.h's traits, w = s·q + o in fp32 (as the
// CPU's dequantizer) and rounded to bf16 for the tensor cores. A lane's 8 weights lie in one
// 16-weight half of a 32-weight chunk, so they share one scale and offset.
template <typename Block>
struct BlockRows {
  const uint8_t* w;
  int64_t row_bytes;
  __device__ __forceinline__ uint4 Load(int64_t row, int64_t c, int q) const {
    using Traits = ChunkTraits<Block>;
    const Block& b = reinterpret_cast<const Block*>(w + row * row_bytes)[c / Traits::kChunks];
    const int chunk = static_cast<int>(c % Traits::kChunks);
    float s[2], o[2];
    Traits::Affine(b, chunk, s, o);
    const float scale = s[q / 2], offset = o[q / 2];
    uint32_t words[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int j = 8 * q + 2 * i;
      words[i] = PackBf16(scale * static_cast<float>(Traits::Q(b, chunk, j)) + offset,
                          scale * static_cast<float>(Traits::Q(b, chunk, j + 1)) + offset);
    }
    return {words[0], words[1], words[2], words[3]};
  }
};

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
// (Minimum one CTA per SM: without it ptxas held the wide tiles to 128 registers and spilled.)
template <typename Weights, int FT, int TT>
__global__ void __launch_bounds__(kThreads, 1)
    InvariantGemmKernel(InvariantGemmParams p, Weights weights) {
  constexpr int kAcc = FT * TT * 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;
  const int64_t n0 = int64_t{blockIdx.x} * 16 * FT, m0 = int64_t{blockIdx.y} * 8 * TT;
  // Weight rows g and g + 8 of each tile; rows past n re-read the last one and activation rows
  // past m read zeros: their sums are never written. An activation row's floats 8q … 8q + 7 of
  // chunk 0 (two float4); chunk c is 8·c float4 on.
  int64_t w_lo[FT], w_hi[FT];
#pragma unroll
  for (int f = 0; f < FT; ++f) {
    w_lo[f] = min(n0 + f * 16 + g, p.n - 1);
    w_hi[f] = min(n0 + f * 16 + g + 8, p.n - 1);
  }
  const float4* x_row[TT];
#pragma unroll
  for (int t = 0; t < TT; ++t) {
    const int64_t row = m0 + t * 8 + g;
    const int64_t src = row < p.m && p.rows != nullptr ? p.rows[row] : row;
    x_row[t] =
        row < p.m ? reinterpret_cast<const float4*>(p.x + src * p.x_stride) + 2 * q : nullptr;
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
        lo[u][f] = in ? weights.Load(w_lo[f], c, q) : uint4{};
        hi[u][f] = in ? weights.Load(w_hi[f], c, q) : uint4{};
      }
#pragma unroll
      for (int t = 0; t < TT; ++t) {
        x[u][t] = in && x_row[t] ? LoadActivations(x_row[t] + 8 * c) : uint4{};
      }
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

template <typename Weights, int FT, int TT>
cudaError_t Launch(const InvariantGemmParams& p, const Weights& weights, cudaStream_t stream) {
  const int64_t ctas_n = (p.n + 16 * FT - 1) / (16 * FT);
  const int64_t ctas_m = (p.m + 8 * TT - 1) / (8 * TT);
  if (ctas_n > 0x7fffffff || ctas_m > 65535) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(ctas_n), static_cast<unsigned>(ctas_m));
  InvariantGemmKernel<Weights, FT, TT><<<grid, kThreads, 0, stream>>>(p, weights);
  return cudaGetLastError();
}

// Tiles by row count: one 16 × 8 tile per CTA for decode rows (the most CTAs over the weights),
// wider row tiles up to 32 rows (each weight fragment feeds more products), 32 × 32 beyond.
template <typename Weights>
cudaError_t LaunchTiles(const InvariantGemmParams& p, const Weights& weights, cudaStream_t stream) {
  if (p.m <= 8) return Launch<Weights, 1, 1>(p, weights, stream);
  if (p.m <= 16) return Launch<Weights, 1, 2>(p, weights, stream);
  if (p.m <= 32) return Launch<Weights, 1, 4>(p, weights, stream);
  return Launch<Weights, 2, 4>(p, weights, stream);
}

template <typename Block>
cudaError_t LaunchBlocks(const InvariantGemmParams& p, cudaStream_t stream) {
  const int64_t row_bytes = model::RowBytes(FileDType(p.w_type), p.k);
  return LaunchTiles(p, BlockRows<Block>{static_cast<const uint8_t*>(p.w), row_bytes}, stream);
}

}  // namespace

bool InvariantGemmTakes(WeightType type) {
  // The block types are those a file stores as they are (the CPU's repacked layouts have no file
  // type: FileDType gives them F32).
  return type == WeightType::kBF16 || model::IsQuantized(FileDType(type));
}

bool InvariantGemmServes(const InvariantGemmParams& p) {
  const auto aligned = [](const void* ptr, uintptr_t to) {
    return reinterpret_cast<uintptr_t>(ptr) % to == 0;
  };
  const bool bf16 = p.w_type == WeightType::kBF16;
  // A block type's rows are whole blocks (2-byte aligned: their f16 fields); bf16 rows are read
  // 16 bytes at a time.
  const int64_t per_block = bf16 ? 8 : int64_t{model::Layout(FileDType(p.w_type)).block_elements};
  return InvariantGemmTakes(p.w_type) && p.m >= 1 && p.n >= 1 && p.k >= per_block &&
         p.k % per_block == 0 && p.x_stride >= p.k && p.x_stride % 4 == 0 && p.out_stride >= p.n &&
         p.x != nullptr && p.w != nullptr && p.out != nullptr && aligned(p.x, 16) &&
         aligned(p.w, bf16 ? 16 : 2);
}

cudaError_t LaunchInvariantGemm(const InvariantGemmParams& p, cudaStream_t stream) {
  if (!InvariantGemmServes(p)) return cudaErrorInvalidValue;
  switch (p.w_type) {
    case WeightType::kQ8_0:
      return LaunchBlocks<BlockQ8_0>(p, stream);
    case WeightType::kQ4_0:
      return LaunchBlocks<BlockQ4_0>(p, stream);
    case WeightType::kQ4_1:
      return LaunchBlocks<BlockQ4_1>(p, stream);
    case WeightType::kQ5_0:
      return LaunchBlocks<BlockQ5_0>(p, stream);
    case WeightType::kQ5_1:
      return LaunchBlocks<BlockQ5_1>(p, stream);
    case WeightType::kQ4_K:
      return LaunchBlocks<BlockQ4_K>(p, stream);
    case WeightType::kQ5_K:
      return LaunchBlocks<BlockQ5_K>(p, stream);
    case WeightType::kQ6_K:
      return LaunchBlocks<BlockQ6_K>(p, stream);
    default:
      return LaunchTiles(p, Bf16Rows{static_cast<const uint16_t*>(p.w), p.k}, stream);
  }
}

}  // namespace arbor::kernels
