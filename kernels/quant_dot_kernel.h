// The body of the 8-bit-activation quantized matmul (quant_dot.h), written once over an
// instruction-set policy `Isa` and compiled by each quant_dot_<isa>.cc with its own flags inside
// its own namespace (ARBOR_QUANT_ISA_NS; see quant_chunk_bytes.h for why).
//
// Per chunk of 32 weights and row of activations the kernel computes the integer Σ q_w·q_x in
// 32-bit lanes (each lane four adjacent products, so lanes 0–3 cover the first 16 weights and
// lanes 4–7 the second: the halves Q6_K scales separately), converts it to float once and
// accumulates it times s_w·d_x; the weight type's offset adds o·d_x·Σq_x from the precomputed
// sums. Each decoded chunk serves up to kMaxRows rows (sibling branches, prefill).
//
// The policy provides, for vectors VI (integers) and VF (floats) holding kStep chunks:
//   Combine(const ByteChunk*) → VI       the chunks' bytes side by side
//   Scales(const ByteChunk*) → VF        s per lane: [s(c, 0) ×4, s(c, 1) ×4] per chunk
//   Dot(VI u8, VI s8) → VI               Σ of 4 adjacent u8·s8 products per 32-bit lane
//   Signed / PrepareSigned / DotSigned   the same for Q8_0's signed weights
//   LoadX, LoadF, ToFloat, Mul, Fma, Zero, Sum.
#ifndef ARBOR_QUANT_ISA_NS
#error "define ARBOR_QUANT_ISA_NS first"
#endif

#include "kernels/quant_chunk_bytes.h"
#include "kernels/quant_dot.h"

namespace arbor::kernels::ARBOR_QUANT_ISA_NS {

// Rows of activations per pass over a weight row: R accumulators, the weights, their scales and
// temporaries fit the 16 AVX2 registers.
inline constexpr int kMaxRows = 8;

template <typename Isa, int R, typename Block>
void RowDot(const Block* w, const Q8Rows& x, int64_t row0, float* out) {
  using VI = typename Isa::VI;
  using VF = typename Isa::VF;
  constexpr int kStep = Isa::kStep;
  constexpr int kPerBlock = kChunksPerBlock<Block>;
  // Q8_0's signed weights carry no offset; Q6_K's offset differs between halves.
  constexpr bool kOffset = !kSignedBytes<Block>;
  VF acc[R];
  float offset[R];
  const int8_t* xq[R];
  const float* xd[R];
  const float* xs[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = Isa::Zero();
    offset[r] = 0.0f;
    const int64_t at = (row0 + r) * x.stride;
    xq[r] = x.q + 32 * at;
    xd[r] = x.scales + 8 * at;
    xs[r] = kSplitScales<Block> ? x.half_sums + 2 * at : x.chunk_sums + at;
  }
  for (int64_t g = 0; g < x.chunks; g += kStep) {
    ByteChunk chunks[kStep];
    for (int i = 0; i < kStep; ++i) {
      const int64_t c = g + i;
      if (kStep == 1 || c < x.chunks) {
        LoadChunk(w[c / kPerBlock], static_cast<int>(c % kPerBlock), chunks[i]);
      } else {  // Past an odd end: zero weights against the zero padding of the activations.
        chunks[i].q = _mm256_setzero_si256();
        chunks[i].s[0] = chunks[i].s[1] = chunks[i].o[0] = chunks[i].o[1] = 0.0f;
      }
    }
    const VI wq = Isa::Combine(chunks);
    const VF ws = Isa::Scales(chunks);
    typename Isa::Signed signed_w;
    if constexpr (kSignedBytes<Block>) signed_w = Isa::PrepareSigned(wq);
    for (int r = 0; r < R; ++r) {
      const VI xv = Isa::LoadX(xq[r] + 32 * g);
      VI dot;
      if constexpr (kSignedBytes<Block>) {
        dot = Isa::DotSigned(signed_w, xv);
      } else {
        dot = Isa::Dot(wq, xv);
      }
      acc[r] = Isa::Fma(Isa::ToFloat(dot), Isa::Mul(ws, Isa::LoadF(xd[r] + 8 * g)), acc[r]);
      if constexpr (kOffset) {
        for (int i = 0; i < kStep; ++i) {
          if constexpr (kSplitScales<Block>) {
            offset[r] += chunks[i].o[0] * xs[r][2 * (g + i)] + chunks[i].o[1] * xs[r][2 * (g + i) + 1];
          } else {
            offset[r] += chunks[i].o[0] * xs[r][g + i];
          }
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = Isa::Sum(acc[r]) + offset[r];
}

// RowDot for 1 to kMaxRows rows.
template <typename Isa, typename Block>
void RowDots(const Block* w, const Q8Rows& x, int64_t row0, int rows, float* out) {
  switch (rows) {
    case 1: return RowDot<Isa, 1>(w, x, row0, out);
    case 2: return RowDot<Isa, 2>(w, x, row0, out);
    case 3: return RowDot<Isa, 3>(w, x, row0, out);
    case 4: return RowDot<Isa, 4>(w, x, row0, out);
    case 5: return RowDot<Isa, 5>(w, x, row0, out);
    case 6: return RowDot<Isa, 6>(w, x, row0, out);
    case 7: return RowDot<Isa, 7>(w, x, row0, out);
    default: return RowDot<Isa, 8>(w, x, row0, out);
  }
}

// Output features [n_begin, n_end) for every row, kMaxRows rows per pass over a weight row.
template <typename Isa, typename Block>
void Range(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  const int64_t blocks = p.x.chunks / kChunksPerBlock<Block>;
  const Block* w = static_cast<const Block*>(p.w);
  for (int64_t m0 = 0; m0 < p.m; m0 += kMaxRows) {
    const int rows = p.m - m0 < kMaxRows ? static_cast<int>(p.m - m0) : kMaxRows;
    for (int64_t n = n_begin; n < n_end; ++n) {
      float out[kMaxRows];
      RowDots<Isa>(w + n * blocks, p.x, m0, rows, out);
      for (int r = 0; r < rows; ++r) p.out[(m0 + r) * p.out_stride + n] = out[r];
    }
  }
}

template <typename Isa>
void DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  switch (p.w_type) {
    case WeightType::kQ8_0: return Range<Isa, BlockQ8_0>(p, n_begin, n_end);
    case WeightType::kQ4_0: return Range<Isa, BlockQ4_0>(p, n_begin, n_end);
    case WeightType::kQ4_1: return Range<Isa, BlockQ4_1>(p, n_begin, n_end);
    case WeightType::kQ5_0: return Range<Isa, BlockQ5_0>(p, n_begin, n_end);
    case WeightType::kQ5_1: return Range<Isa, BlockQ5_1>(p, n_begin, n_end);
    case WeightType::kQ4_K: return Range<Isa, BlockQ4_K>(p, n_begin, n_end);
    case WeightType::kQ5_K: return Range<Isa, BlockQ5_K>(p, n_begin, n_end);
    default: return Range<Isa, BlockQ6_K>(p, n_begin, n_end);
  }
}

// The 256-bit policy pieces shared by AVX2 and AVX-VNNI (one chunk per vector).
struct Ymm {
  using VI = __m256i;
  using VF = __m256;
  static constexpr int kStep = 1;
  static VI Combine(const ByteChunk* c) { return c[0].q; }
  static VF Scales(const ByteChunk* c) {
    return _mm256_set_m128(_mm_set1_ps(c[0].s[1]), _mm_set1_ps(c[0].s[0]));
  }
  // Q8_0: |w| as the unsigned operand and x with w's sign (|w| ≤ 128, so a maddubs pair sum is at
  // most 2·128·127 and does not saturate).
  struct Signed {
    VI magnitude, sign;
  };
  static Signed PrepareSigned(VI w) { return {_mm256_sign_epi8(w, w), w}; }
  static VI LoadX(const int8_t* q) { return _mm256_loadu_si256(reinterpret_cast<const VI*>(q)); }
  static VF LoadF(const float* f) { return _mm256_loadu_ps(f); }
  static VF ToFloat(VI v) { return _mm256_cvtepi32_ps(v); }
  static VF Mul(VF a, VF b) { return _mm256_mul_ps(a, b); }
  static VF Fma(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
  static VF Zero() { return _mm256_setzero_ps(); }
  static float Sum(VF v) {
    const __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 pairs = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
  }
};

}  // namespace arbor::kernels::ARBOR_QUANT_ISA_NS
