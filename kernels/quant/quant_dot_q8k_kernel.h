// The body of the per-256-activation kernels for Q4_K and Q6_K (QuantMatmulQ8K), written once
// over the instruction-set policies of quant_dot_kernel.h and compiled by quant_dot_avx2.cc (one
// chunk per vector, up to kQ8KMaxRows rows) and quant_dot_avx512vnni.cc (two chunks per vector,
// rows in groups of 8), each with its own flags inside its own namespace.
//
// Per 32-weight chunk, maddubs multiplies the unsigned weight integers (Q4_K: 0..15, Q6_K:
// 0..63) by the 8-bit activations into 16-bit pairs (at most 2·63·127: no saturation), and madd
// multiplies those by the chunk's sub-block scales (Q4_K: one 6-bit scale; Q6_K: a signed 8-bit
// one per 16 weights, the low and high half of the chunk's pairs) into 32-bit sums. A
// super-block's sums are integers, converted to float once and scaled by d_x·d; the offsets
// subtract d_x·dmin·Σ m_j·Σq_j (Q4_K's minimums) or d_x·d·32·Σ sc_k·Σq_k (Q6_K's zero point 32),
// two multiply-adds over the activations' 16 float sums d_x·Σq per 16 values. Each decoded
// super-block serves every row of a group.
//
// Beyond quant_dot_kernel.h's LoadX, ToFloat, Fma, Zero and Sum, the policy provides, for kStep
// chunks per vector:
//   Pack(const __m256i*) → VI        kStep 256-bit values side by side
//   ScaledDot(VI w, VI x, VI s) → VI madd(maddubs(w, x), s)
//   AddI, ZeroI, Set1; kQ8KRows (rows per group).
#ifndef ARBOR_QUANT_ISA_NS
#error "define ARBOR_QUANT_ISA_NS first"
#endif
#ifndef ARBOR_KERNELS_QUANT_QUANT_DOT_Q8K_KERNEL_H_
#define ARBOR_KERNELS_QUANT_QUANT_DOT_Q8K_KERNEL_H_

#include <algorithm>

#include "kernels/quant/quant_chunk_bytes.h"
#include "kernels/quant/quant_dot.h"
#include "kernels/quant/quant_dot_kernel.h"

namespace arbor::kernels::ARBOR_QUANT_ISA_NS {
namespace q8k {

// The weights of chunk c of a super-block as 32 bytes, and its scales as 16 int16 (one per pair
// of products: the low 8 for weights 0–15, the high 8 for 16–31).
struct ChunkWeights {
  __m256i q;
  __m256i scales;
};

// A super-block's decoded scales: Q4_K's eight 6-bit sub-block scales as bytes (Q6_K reads its
// own from the block), and the integer weights of its offset per 16 activations (Q4_K: each
// sub-block's minimum, twice; Q6_K: its scales).
struct BlockScales {
  uint8_t scale[8];
  __m256i offset_weights;
};

// Q4_K's packed 6-bit fields four bytes at a time (the layout ScaleMinK4 reads one at a time):
// bytes 0–3 hold scales 0–3 and bytes 4–7 minimums 0–3 in their low six bits, and the top two
// bits of scales and minimums 4–7, whose low four bits are the nibbles of bytes 8–11.
inline BlockScales Decode(const BlockQ4_K& block) {
  uint32_t u[3];
  std::memcpy(u, block.scales, 12);
  const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, top2 = 0x30303030;
  const uint32_t scales[2] = {u[0] & low6, (u[2] & low4) | ((u[0] >> 2) & top2)};
  const uint32_t mins[2] = {u[1] & low6, ((u[2] >> 4) & low4) | ((u[1] >> 2) & top2)};
  BlockScales s;
  std::memcpy(s.scale, scales, 8);
  const __m128i min_bytes =
      _mm_set_epi32(0, 0, static_cast<int>(mins[1]), static_cast<int>(mins[0]));
  s.offset_weights = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(min_bytes, min_bytes));
  return s;
}
inline BlockScales Decode(const BlockQ6_K& block) {
  BlockScales s;
  s.offset_weights =
      _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block.scales)));
  return s;
}

inline ChunkWeights Chunk(const BlockQ4_K& block, const BlockScales& s, int c) {
  return {Nibbles32(block.qs + 32 * (c / 2), c & 1), _mm256_set1_epi16(s.scale[c])};
}
inline ChunkWeights Chunk(const BlockQ6_K& block, const BlockScales&, int c) {
  const int n = c / 4, g = c % 4;  // Chunk c is group g of half n (as LoadChunk reads it).
  return {_mm256_or_si256(Nibbles32(block.ql + 64 * n + 32 * (g & 1), g >= 2),
                          HighBits(block.qh + 32 * n, 2 * g, 3)),
          _mm256_set_m128i(_mm_set1_epi16(block.scales[8 * n + 2 * g + 1]),
                           _mm_set1_epi16(block.scales[8 * n + 2 * g]))};
}

// The super-block's scale d, and its offset weights' factor (dmin; 32·d): the offset of a row is
// factor · Σ weight_k·(d_x·Σq_k) over the row's sums per 16, subtracted.
inline float Scale(const BlockQ4_K& block) { return Half(block.d); }
inline float Scale(const BlockQ6_K& block) { return Half(block.d); }
inline float OffsetFactor(const BlockQ4_K& block) { return Half(block.dmin); }
inline float OffsetFactor(const BlockQ6_K& block) { return 32.0f * Half(block.d); }

// Up to this many rows a kernel applies the offsets from the integer sums, beyond from the float
// ones. Every group of rows (at most 8) takes the integer sums: one order for a row whatever
// group it is in (batch invariance), at the speed of the float ones within 2 % from 4 to 8 rows.
inline constexpr int kFewRows = 8;

// One weight row (`blocks` super-blocks) against rows[0..R).
template <typename Isa, int R, typename Block>
void RowDots(const Block* w, const Q8KRow* rows, int64_t blocks, float* out) {
  using VI = typename Isa::VI;
  typename Isa::VF acc[R];
  __m256 offsets[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    acc[r] = Isa::Zero();
    offsets[r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const Block& block = w[b];
    const BlockScales decoded = Decode(block);
    VI dot[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) dot[r] = Isa::ZeroI();
#pragma GCC unroll 8
    for (int c = 0; c < 8; c += Isa::kStep) {
      __m256i q[Isa::kStep], s[Isa::kStep];
#pragma GCC unroll 8
      for (int j = 0; j < Isa::kStep; ++j) {
        const ChunkWeights chunk = Chunk(block, decoded, c + j);
        q[j] = chunk.q;
        s[j] = chunk.scales;
      }
      const VI weights = Isa::Pack(q), scales = Isa::Pack(s);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const VI x = Isa::LoadX(rows[r].q + 256 * b + 32 * c);
        dot[r] = Isa::AddI(dot[r], Isa::ScaledDot(weights, x, scales));
      }
    }
    const float d = Scale(block), factor = OffsetFactor(block);
    const __m256i weights16 = decoded.offset_weights;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      acc[r] = Isa::Fma(Isa::ToFloat(dot[r]), Isa::Set1(rows[r].d[b] * d), acc[r]);
    }
    if constexpr (R <= kFewRows) {  // Integer sums: one madd per row.
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256i sums =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r].sums + 16 * b));
        offsets[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(sums, weights16)),
                                     _mm256_set1_ps(rows[r].d[b] * factor), offsets[r]);
      }
    } else {  // The weights as floats once, then two multiply-adds per row.
      const __m256 f = _mm256_set1_ps(factor);
      const __m256 weights[2] = {
          _mm256_mul_ps(
              f, _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(weights16)))),
          _mm256_mul_ps(f, _mm256_cvtepi32_ps(
                               _mm256_cvtepi16_epi32(_mm256_extracti128_si256(weights16, 1))))};
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const float* sums = rows[r].scaled_sums + 16 * b;
        offsets[r] = _mm256_fmadd_ps(weights[0], _mm256_loadu_ps(sums), offsets[r]);
        offsets[r] = _mm256_fmadd_ps(weights[1], _mm256_loadu_ps(sums + 8), offsets[r]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) out[r] = Isa::Sum(acc[r]) - Ymm::Sum(offsets[r]);
}

// RowDots for 1 to Isa::kQ8KRows rows.
template <typename Isa, int R = Isa::kQ8KRows, typename Block>
void RowDotsOf(int rows, const Block* w, const Q8KRow* x, int64_t blocks, float* out) {
  if constexpr (R > 1) {
    if (rows < R) return RowDotsOf<Isa, R - 1>(rows, w, x, blocks, out);
  }
  RowDots<Isa, R>(w, x, blocks, out);
}

// Output features [n_begin, n_end) of every row, Isa::kQ8KRows rows per pass over a weight row.
template <typename Isa, typename Block>
void Range(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  const int64_t blocks = p.rows[0].blocks;
  const Block* w = static_cast<const Block*>(p.w);
  for (int64_t m0 = 0; m0 < p.m; m0 += Isa::kQ8KRows) {
    const int rows = static_cast<int>(std::min<int64_t>(Isa::kQ8KRows, p.m - m0));
    for (int64_t n = n_begin; n < n_end; ++n) {
      PrefetchAhead(w, blocks, n, n_end);
      float out[Isa::kQ8KRows];
      RowDotsOf<Isa>(rows, w + n * blocks, p.rows + m0, blocks, out);
      for (int r = 0; r < rows; ++r) p.out[(m0 + r) * p.out_stride + n] = out[r];
    }
  }
}

template <typename Isa>
void KQuantRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  if (p.w_type == WeightType::kQ6_K) return Range<Isa, BlockQ6_K>(p, n_begin, n_end);
  Range<Isa, BlockQ4_K>(p, n_begin, n_end);
}

}  // namespace q8k
}  // namespace arbor::kernels::ARBOR_QUANT_ISA_NS

#endif  // ARBOR_KERNELS_QUANT_QUANT_DOT_Q8K_KERNEL_H_
