#include "kernels/quant/quant_matmul.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "base/bf16.h"
#include "kernels/cpu/cpu_simd.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_chunks.h"
#include "kernels/quant/repacked_rows.h"

#ifdef ARBOR_CPU_AVX2
#define ARBOR_QUANT_ISA_NS f32path
#include "kernels/quant/quant_chunk_bytes.h"
#undef ARBOR_QUANT_ISA_NS
#endif

namespace arbor::kernels {
namespace {

constexpr int kMaxRows = 8;  // Rows of x sharing one widened chunk (14 of 16 AVX2 registers).
constexpr int kHalf = kQuantBlock / 2;

#ifdef ARBOR_CPU_AVX2
using f32path::ByteChunk;
using f32path::kSplitScales;
using f32path::LoadChunk;

// A chunk widened into registers: q_j as four vectors of 8 floats, s and o per half.
struct WideChunk {
  __m256 q[4];
  float s[2];
  float o[2];
};

// 32 unsigned bytes (signed when `is_signed`) as four vectors of floats.
inline void Widen32(__m256i bytes, bool is_signed, __m256 (&q)[4]) {
  const __m128i lo = _mm256_castsi256_si128(bytes), hi = _mm256_extracti128_si256(bytes, 1);
  const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
  for (int i = 0; i < 4; ++i) {
    q[i] = _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(parts[i])
                                        : _mm256_cvtepu8_epi32(parts[i]));
  }
}

template <typename Block>
inline void WidenChunk(const Block& b, int c, WideChunk& w) {
  ByteChunk bytes;
  LoadChunk(b, c, bytes);
  bool is_signed = f32path::kSignedBytes<Block>;
  if constexpr (kSplitScales<Block>) {
    // Q6_K's zero point subtracted in the bytes rather than kept as an offset: s·q − 32·s would
    // cancel in fp32 where s·(q − 32) is exact.
    bytes.q = _mm256_sub_epi8(bytes.q, _mm256_set1_epi8(32));
    bytes.o[0] = bytes.o[1] = 0.0f;
    is_signed = true;
  }
  Widen32(bytes.q, is_signed, w.q);
  for (int h = 0; h < 2; ++h) {
    w.s[h] = bytes.s[h];
    w.o[h] = bytes.o[h];
  }
}

// Rows [0, R) of x against one weight row of `blocks` blocks; xsum holds Σ x per 16 weights.
template <int R, typename Block>
void RowDot(const Block* w, int64_t blocks, const float* const* x, const float* const* xsum,
            float* out) {
  constexpr int kChunks = ChunkTraits<Block>::kChunks;
  __m256 acc[R];
  float offset[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    offset[r] = 0.0f;
  }
  WideChunk chunk;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int c = 0; c < kChunks; ++c) {
      WidenChunk(w[b], c, chunk);
      const int64_t at = (b * kChunks + c) * kQuantBlock;
      const __m256 s0 = _mm256_set1_ps(chunk.s[0]);
      for (int r = 0; r < R; ++r) {
        const float* xc = x[r] + at;
        const float* sums = xsum[r] + at / kHalf;
        __m256 lo = _mm256_mul_ps(chunk.q[0], _mm256_loadu_ps(xc));
        lo = _mm256_fmadd_ps(chunk.q[1], _mm256_loadu_ps(xc + 8), lo);
        __m256 hi = _mm256_mul_ps(chunk.q[2], _mm256_loadu_ps(xc + 16));
        hi = _mm256_fmadd_ps(chunk.q[3], _mm256_loadu_ps(xc + 24), hi);
        if constexpr (kSplitScales<Block>) {
          acc[r] = _mm256_fmadd_ps(s0, lo, acc[r]);
          acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(chunk.s[1]), hi, acc[r]);
          offset[r] += chunk.o[0] * sums[0] + chunk.o[1] * sums[1];
        } else {
          acc[r] = _mm256_fmadd_ps(s0, _mm256_add_ps(lo, hi), acc[r]);
          offset[r] += chunk.o[0] * (sums[0] + sums[1]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = simd::HorizontalSum(acc[r]) + offset[r];
}
#else
template <int R, typename Block>
void RowDot(const Block* w, int64_t blocks, const float* const* x, const float* const* xsum,
            float* out) {
  using Traits = ChunkTraits<Block>;
  float acc[R] = {}, offset[R] = {};
  Chunk chunk;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int c = 0; c < Traits::kChunks; ++c) {
      LoadChunk(w[b], c, chunk);
      const int64_t at = (b * Traits::kChunks + c) * kQuantBlock;
      for (int r = 0; r < R; ++r) {
        for (int h = 0; h < 2; ++h) {
          float dot = 0.0f;
          for (int j = h * kHalf; j < (h + 1) * kHalf; ++j) dot += chunk.q[j] * x[r][at + j];
          acc[r] += chunk.s[h] * dot;
          offset[r] += chunk.o[h] * xsum[r][at / kHalf + h];
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = acc[r] + offset[r];
}
#endif

// RowDot for 1 to kMaxRows rows, indexed by rows − 1.
template <typename Block, int... R>
constexpr auto MakeRowDots(std::integer_sequence<int, R...>) {
  using Fn = void (*)(const Block*, int64_t, const float* const*, const float* const*, float*);
  return std::array<Fn, sizeof...(R)>{&RowDot<R + 1, Block>...};
}
template <typename Block>
constexpr auto kRowDots = MakeRowDots<Block>(std::make_integer_sequence<int, kMaxRows>());

// Output features [n_begin, n_end) for every row of x, up to kMaxRows rows per pass over a
// weight row.
template <typename Block>
void Range(const MatmulParams& p, const std::vector<float>& xsum, int64_t n_begin, int64_t n_end) {
  const int64_t blocks = p.k / (int64_t{ChunkTraits<Block>::kChunks} * kQuantBlock);
  const int64_t halves = p.k / kHalf;
  const Block* w = static_cast<const Block*>(p.w);
  for (int64_t m0 = 0; m0 < p.m; m0 += kMaxRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kMaxRows, p.m - m0));
    const float* x[kMaxRows];
    const float* sums[kMaxRows];
    for (int r = 0; r < rows; ++r) {
      x[r] = p.x + (m0 + r) * p.x_stride;
      sums[r] = xsum.data() + (m0 + r) * halves;
    }
    for (int64_t n = n_begin; n < n_end; ++n) {
      float out[kMaxRows];
      kRowDots<Block>[rows - 1](w + n * blocks, blocks, x, sums, out);
      for (int r = 0; r < rows; ++r) p.out[(m0 + r) * p.out_stride + n] = out[r];
    }
  }
}

}  // namespace

QuantPath QuantPathOf(const MatmulParams& p) {
  QuantPath path;
  // Repacked matrices exist only for the 8-bit mode on CPUs that run their kernels
  // (repacked_rows.h); the K-quants' take per-256 activations, as the file's K-quant rows do.
  if (IsRepackedKQuant(p.w_type)) {
    path.q8k = true;
    return path;
  }
  if (IsRepacked(p.w_type)) {
    // The batch-invariant choice at every row count, in either numerics (quant_matmul.h).
    path.isa = Q8IsaForRows(p.m);
    return path;
  }
  if (p.activation_quant != ActivationQuant::kQ8) return path;
  const std::optional<Q8Isa> isa = Q8IsaForRows(p.m, p.batch_invariant);
  if (!isa) return path;
  if (TakesQ8K(p)) {
    path.q8k = true;
  } else {
    path.isa = isa;
  }
  return path;
}

void QuantMatmul(const MatmulParams& p, ThreadPool* pool) {
  if (p.m == 0 || p.n == 0) return;
  const QuantPath path = QuantPathOf(p);
  if (path.q8k) return QuantMatmulQ8K(p, pool);
  if (path.isa) return QuantMatmulQ8(p, *path.isa, pool);
  // Σ x_j per row and 16 weights: the offset term (o·Σ x) of every chunk of every weight row.
  const int64_t halves = p.k / kHalf;
  std::vector<float> xsum(p.m * halves);
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t h = 0; h < halves; ++h) {
      const float* xh = p.x + i * p.x_stride + h * kHalf;
      float sum = 0.0f;
      for (int j = 0; j < kHalf; ++j) sum += xh[j];
      xsum[i * halves + h] = sum;
    }
  }
  auto run = [&](int64_t begin, int64_t end) {
    switch (p.w_type) {
      case WeightType::kQ8_0:
        return Range<BlockQ8_0>(p, xsum, begin, end);
      case WeightType::kQ4_0:
        return Range<BlockQ4_0>(p, xsum, begin, end);
      case WeightType::kQ4_1:
        return Range<BlockQ4_1>(p, xsum, begin, end);
      case WeightType::kQ5_0:
        return Range<BlockQ5_0>(p, xsum, begin, end);
      case WeightType::kQ5_1:
        return Range<BlockQ5_1>(p, xsum, begin, end);
      case WeightType::kQ4_K:
        return Range<BlockQ4_K>(p, xsum, begin, end);
      case WeightType::kQ5_K:
        return Range<BlockQ5_K>(p, xsum, begin, end);
      default:
        return Range<BlockQ6_K>(p, xsum, begin, end);
    }
  };
  if (pool == nullptr) return run(0, p.n);
  // ~64k multiply-adds per hand-off, as the float matmul.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, p.m * p.k));
  pool->ParallelFor(p.n, grain, run);
}

}  // namespace arbor::kernels
