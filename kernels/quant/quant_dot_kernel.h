// The body of the 8-bit-activation quantized matmul (quant_dot.h), written once over an
// instruction-set policy `Isa` and compiled by each quant_dot_<isa>.cc with its own flags inside
// its own namespace (ARBOR_QUANT_ISA_NS; see quant_chunk_bytes.h for why).
//
// Per chunk of 32 weights and row of activations the kernel computes the integer Σ q_w·q_x in
// 32-bit lanes (each lane four adjacent products, so lanes 0–3 cover the first 16 weights and
// lanes 4–7 the second: the halves Q6_K scales separately), converts it to float once and
// accumulates it times s_w·d_x; the weight type's offset adds o·d_x·Σq_x from the precomputed
// sums, for eight rows in one vector. Each decoded chunk serves up to kMaxRows rows (sibling
// branches, prefill).
//
// The policy provides, for vectors VI (integers) and VF (floats) holding kStep chunks:
//   Combine(const ByteChunk*) → VI       the chunks' bytes side by side
//   Scales<split>(const ByteChunk*) → VF s per lane: [s(c, 0) ×4, s(c, 1) ×4] per chunk
//   Dot(VI u8, VI s8) → VI               Σ of 4 adjacent u8·s8 products per 32-bit lane
//   Signed / PrepareSigned / DotSigned   the same for Q8_0's signed weights
//   LoadX, LoadF, ToFloat, Mul, Add, Fma, Zero, Sum; kRegisters (vector registers).
#ifndef ARBOR_QUANT_ISA_NS
#error "define ARBOR_QUANT_ISA_NS first"
#endif
#ifndef ARBOR_KERNELS_QUANT_QUANT_DOT_KERNEL_H_
#define ARBOR_KERNELS_QUANT_QUANT_DOT_KERNEL_H_

#include "kernels/quant/quant_chunk_bytes.h"
#include "kernels/quant/quant_dot.h"

namespace arbor::kernels::ARBOR_QUANT_ISA_NS {

// Rows of activations per pass over a weight row: eight accumulators, the weights, their scales
// and temporaries fit the 16 AVX2 registers, and the offset sums of eight rows one vector.
inline constexpr int kMaxRows = 8;

// Where a pass over a weight row accumulates: a vector per row, and the offset terms of all the
// rows in one AVX2 vector (lane r for row r), which Q8Rows::sums's layout makes one FMA per half.
template <typename Isa, int R>
struct Sums {
  typename Isa::VF acc[R];
  __m256 offset;
};

// The kStep chunks from chunk i of the blocks at `base` (chunk g of the row, of `chunks`), zeros
// past the end (against the zero padding of the activations). Inlined with i a constant, the
// chunk's place in its block — nibble half, bit shift, scale field — folds away.
template <typename Isa, bool kCheckEnd, typename Block>
[[gnu::always_inline]] inline void LoadStep(const Block* base, int i, int64_t g, int64_t chunks,
                                            ByteChunk (&out)[Isa::kStep]) {
  constexpr int kPerBlock = kChunksPerBlock<Block>;
  for (int j = 0; j < Isa::kStep; ++j) {
    if (!kCheckEnd || g + j < chunks) {
      LoadChunk(base[(i + j) / kPerBlock], (i + j) % kPerBlock, out[j]);
    } else {
      out[j].q = _mm256_setzero_si256();
      out[j].s[0] = out[j].s[1] = out[j].o[0] = out[j].o[1] = 0.0f;
    }
  }
}

// One step: chunks from chunk i of `base` (chunk g of the row) against every row, into `sums`.
template <typename Isa, int R, bool kCheckEnd, typename Block>
[[gnu::always_inline]] inline void Step(const Block* base, int i, int64_t g, const Q8Rows& x,
                                        const int8_t* const (&xq)[R], const float* const (&xd)[R],
                                        const float* xs, Sums<Isa, R>& sums) {
  using VI = typename Isa::VI;
  constexpr int kStep = Isa::kStep;
  ByteChunk chunks[kStep];
  LoadStep<Isa, kCheckEnd>(base, i, g, x.chunks, chunks);
  const VI wq = Isa::Combine(chunks);
  const typename Isa::VF ws = Isa::template Scales<kSplitScales<Block>>(chunks);
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
    sums.acc[r] = Isa::Fma(Isa::ToFloat(dot), Isa::Mul(ws, Isa::LoadF(xd[r] + 8 * g)), sums.acc[r]);
  }
  // Q8_0's signed weights carry no offset.
  if constexpr (!kSignedBytes<Block>) {
    for (int j = 0; j < kStep; ++j) {
      const float* at = xs + 24 * (g + j);
      if constexpr (kSplitScales<Block>) {
        for (int h = 0; h < 2; ++h) {
          sums.offset = _mm256_fmadd_ps(_mm256_set1_ps(chunks[j].o[h]), _mm256_loadu_ps(at + 8 * h),
                                        sums.offset);
        }
      } else {
        sums.offset =
            _mm256_fmadd_ps(_mm256_set1_ps(chunks[j].o[0]), _mm256_loadu_ps(at + 16), sums.offset);
      }
    }
  }
}

template <typename Isa, int R, bool kInvariant, typename Block>
void RowDot(const Block* w, const Q8Rows& x, int64_t row0, float* out) {
  constexpr int kStep = Isa::kStep;
  constexpr int kPerBlock = kChunksPerBlock<Block>;
  // Chunks per unrolled group: a whole K-quant super-block, or two steps.
  constexpr int kGroup = kPerBlock > 2 * kStep ? kPerBlock : 2 * kStep;
  // Each row's sum is a chain of dependent adds (4 cycles each): two sets of sums over alternate
  // steps keep two chains in flight. Past four rows the rows themselves do, and AVX2's 16
  // registers hold only one set. The set count fixes a row's summation order, so batch-invariant
  // 256-bit kernels keep one set at every row count (a row then sums the same way whatever group
  // of rows it shares), at 7-10 % of one row's speed.
  constexpr int kSets = Isa::kRegisters >= 32 || (!kInvariant && R <= 4) ? 2 : 1;
  const int8_t* xq[R];
  const float* xd[R];
  const float* xs = x.sums + SumIndex(row0, 0, 0, x.stride);  // row0 is a multiple of 8.
  Sums<Isa, R> sums[2];
  for (Sums<Isa, R>& s : sums) s.offset = _mm256_setzero_ps();
  for (int r = 0; r < R; ++r) {
    const int64_t at = (row0 + r) * x.stride;
    xq[r] = x.q + 32 * at;
    xd[r] = x.scales + 8 * at;
    for (Sums<Isa, R>& s : sums) s.acc[r] = Isa::Zero();
  }
  int64_t g = 0;
  for (; g + kGroup <= x.chunks; g += kGroup) {
    const Block* base = w + g / kPerBlock;
#pragma GCC unroll 8
    for (int i = 0; i < kGroup; i += kStep) {
      Step<Isa, R, false>(base, i, g + i, x, xq, xd, xs, sums[(i / kStep) % kSets]);
    }
  }
  // The 32-weight types' last chunks (a K-quant row is whole groups).
  for (; g < x.chunks; g += kStep) Step<Isa, R, true>(w + g, 0, g, x, xq, xd, xs, sums[0]);
  float offset[8];
  _mm256_storeu_ps(offset, _mm256_add_ps(sums[0].offset, sums[1].offset));
  for (int r = 0; r < R; ++r) {
    out[r] = Isa::Sum(Isa::Add(sums[0].acc[r], sums[1].acc[r])) + offset[r];
  }
}

// RowDot for 1 to kMaxRows rows.
template <typename Isa, bool kInvariant, typename Block>
void RowDotsOf(const Block* w, const Q8Rows& x, int64_t row0, int rows, float* out) {
  switch (rows) {
    case 1:
      return RowDot<Isa, 1, kInvariant>(w, x, row0, out);
    case 2:
      return RowDot<Isa, 2, kInvariant>(w, x, row0, out);
    case 3:
      return RowDot<Isa, 3, kInvariant>(w, x, row0, out);
    case 4:
      return RowDot<Isa, 4, kInvariant>(w, x, row0, out);
    case 5:
      return RowDot<Isa, 5, kInvariant>(w, x, row0, out);
    case 6:
      return RowDot<Isa, 6, kInvariant>(w, x, row0, out);
    case 7:
      return RowDot<Isa, 7, kInvariant>(w, x, row0, out);
    default:
      return RowDot<Isa, 8, kInvariant>(w, x, row0, out);
  }
}

// RowDotsOf as `invariant` asks: only the 256-bit kernels sum differently for few rows.
template <typename Isa, typename Block>
void RowDots(const Block* w, const Q8Rows& x, int64_t row0, int rows, bool invariant, float* out) {
  if constexpr (Isa::kRegisters < 32) {
    if (!invariant) return RowDotsOf<Isa, false>(w, x, row0, rows, out);
  }
  RowDotsOf<Isa, true>(w, x, row0, rows, out);
}

// Weight rows ahead whose bytes are prefetched while a row is multiplied. (Measured with 8 rows
// of activations on a 30 MB Q8_0 matrix: without it the 256-bit kernels waited on the weight
// loads and ran at a third of their in-cache speed.)
inline constexpr int64_t kPrefetchRows = 2;

// Prefetches weight row n + kPrefetchRows of `w` (rows of `blocks` blocks) when it is below n_end.
template <typename Block>
inline void PrefetchAhead(const Block* w, int64_t blocks, int64_t n, int64_t n_end) {
  if (n + kPrefetchRows >= n_end) return;
  const char* next = reinterpret_cast<const char*>(w + (n + kPrefetchRows) * blocks);
  for (int64_t b = 0; b < blocks * int64_t{sizeof(Block)}; b += 64) {
    _mm_prefetch(next + b, _MM_HINT_T0);
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
      PrefetchAhead(w, blocks, n, n_end);
      float out[kMaxRows];
      RowDots<Isa>(w + n * blocks, p.x, m0, rows, p.batch_invariant, out);
      for (int r = 0; r < rows; ++r) p.out[(m0 + r) * p.out_stride + n] = out[r];
    }
  }
}

template <typename Isa>
void DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  switch (p.w_type) {
    case WeightType::kQ8_0:
      return Range<Isa, BlockQ8_0>(p, n_begin, n_end);
    case WeightType::kQ4_0:
      return Range<Isa, BlockQ4_0>(p, n_begin, n_end);
    case WeightType::kQ4_1:
      return Range<Isa, BlockQ4_1>(p, n_begin, n_end);
    case WeightType::kQ5_0:
      return Range<Isa, BlockQ5_0>(p, n_begin, n_end);
    case WeightType::kQ5_1:
      return Range<Isa, BlockQ5_1>(p, n_begin, n_end);
    case WeightType::kQ4_K:
      return Range<Isa, BlockQ4_K>(p, n_begin, n_end);
    case WeightType::kQ5_K:
      return Range<Isa, BlockQ5_K>(p, n_begin, n_end);
    default:
      return Range<Isa, BlockQ6_K>(p, n_begin, n_end);
  }
}

// The 256-bit policy pieces shared by AVX2 and AVX-VNNI (one chunk per vector).
struct Ymm {
  using VI = __m256i;
  using VF = __m256;
  static constexpr int kStep = 1;
  static VI Combine(const ByteChunk* c) { return c[0].q; }
  static constexpr int kRegisters = 16;
  template <bool kSplit>
  static VF Scales(const ByteChunk* c) {
    if constexpr (!kSplit) return _mm256_set1_ps(c[0].s[0]);
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
  static VF Add(VF a, VF b) { return _mm256_add_ps(a, b); }
  static VF Fma(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
  static VF Zero() { return _mm256_setzero_ps(); }
  static VF Set1(float f) { return _mm256_set1_ps(f); }
  // For the per-256 kernels (quant_dot_q8k_kernel.h).
  static VI Pack(const __m256i* v) { return v[0]; }
  static VI ScaledDot(VI w, VI x, VI s) { return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), s); }
  static VI AddI(VI a, VI b) { return _mm256_add_epi32(a, b); }
  static VI ZeroI() { return _mm256_setzero_si256(); }
  static float Sum(VF v) {
    const __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 pairs = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
  }
};

}  // namespace arbor::kernels::ARBOR_QUANT_ISA_NS

#endif  // ARBOR_KERNELS_QUANT_QUANT_DOT_KERNEL_H_
