// The quantized matmul's 8-bit-activation kernels for AVX-512 (F, BW, VL) with VNNI: vpdpbusd
// on zmm covers two 32-weight chunks per instruction, halving the per-row work of AVX-VNNI.
// Compiled with those extensions only (kernels/CMakeLists.txt).
#define ARBOR_QUANT_ISA_NS avx512vnni
#include <algorithm>
#include <cstring>

#include "kernels/quant/quant_dot_kernel.h"
#include "kernels/quant/quant_dot_q8k_kernel.h"
#include "kernels/quant/repacked_rows.h"

namespace arbor::kernels::avx512vnni {
namespace {

struct Isa {
  using VI = __m512i;
  using VF = __m512;
  static constexpr int kStep = 2;
  static constexpr int kRegisters = 32;
  static VI Combine(const ByteChunk* c) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(c[0].q), c[1].q, 1);
  }
  template <bool kSplit>
  static VF Scales(const ByteChunk* c) {
    if constexpr (!kSplit) {  // [s0 ×8, s1 ×8].
      const __m512d low = _mm512_castps_pd(_mm512_castps256_ps512(_mm256_set1_ps(c[0].s[0])));
      return _mm512_castpd_ps(
          _mm512_insertf64x4(low, _mm256_castps_pd(_mm256_set1_ps(c[1].s[0])), 1));
    }
    const __m128 four = _mm_setr_ps(c[0].s[0], c[0].s[1], c[1].s[0], c[1].s[1]);
    const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    return _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(four));
  }
  static VI Dot(VI u8, VI s8) { return _mm512_dpbusd_epi32(_mm512_setzero_si512(), u8, s8); }
  // Q8_0: |w| as the unsigned operand and x negated where w < 0 (AVX-512 has no vpsignb).
  struct Signed {
    VI magnitude;
    __mmask64 negative;
  };
  static Signed PrepareSigned(VI w) { return {_mm512_abs_epi8(w), _mm512_movepi8_mask(w)}; }
  static VI DotSigned(const Signed& w, VI x) {
    return Dot(w.magnitude, _mm512_mask_sub_epi8(x, w.negative, _mm512_setzero_si512(), x));
  }
  static VI LoadX(const int8_t* q) { return _mm512_loadu_si512(q); }
  static VF LoadF(const float* f) { return _mm512_loadu_ps(f); }
  static VF ToFloat(VI v) { return _mm512_cvtepi32_ps(v); }
  static VF Mul(VF a, VF b) { return _mm512_mul_ps(a, b); }
  static VF Add(VF a, VF b) { return _mm512_add_ps(a, b); }
  static VF Fma(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
  static VF Zero() { return _mm512_setzero_ps(); }
  static float Sum(VF v) { return _mm512_reduce_add_ps(v); }
  // For the per-256 kernel (quant_dot_q8k_kernel.h): 8 rows per pass, measured 1.3× (Q4_K) and
  // 1.5–1.8× (Q6_K) the per-32 kernel above at 8 rows.
  static constexpr int kQ8KRows = 8;
  static VI Pack(const __m256i* v) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(v[0]), v[1], 1);
  }
  static VI ScaledDot(VI w, VI x, VI s) { return _mm512_madd_epi16(_mm512_maddubs_epi16(w, x), s); }
  static VI AddI(VI a, VI b) { return _mm512_add_epi32(a, b); }
  static VI ZeroI() { return _mm512_setzero_si512(); }
  static VF Set1(float f) { return _mm512_set1_ps(f); }
};

// The eight weight vectors of a block of sixteen rows: q[u] holds weights 4u … 4u + 3 of row l
// in lane l, against activation bytes 4u … 4u + 3 (repacked_rows.h).
inline void LoadRows(const Q4x16Block& block, __m512i (&q)[8]) {
  const __m512i low = _mm512_set1_epi8(0x0f);
  for (int t = 0; t < 4; ++t) {
    const __m512i bytes = _mm512_loadu_si512(block.qs + 64 * t);
    q[t] = _mm512_and_si512(bytes, low);
    q[4 + t] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low);
  }
}
inline void LoadRows(const Q8x16Block& block, __m512i (&q)[8]) {
  for (int u = 0; u < 8; ++u) q[u] = _mm512_loadu_si512(block.qs + 64 * u);
}

// Up to kRepackedRows activation rows against one group of sixteen weight rows: per block the
// weights are loaded (unpacked) once into eight vectors of sixteen rows × four weights; each
// activation row's four bytes u are broadcast to meet vector u, eight vpdpbusd sum the block's
// integer products for all sixteen rows, and one conversion and FMA scale them. The order is
// fixed, so a row's result does not depend on the rows beside it.
constexpr int kRepackedRows = 8;
constexpr int kRepackedPrefetchBlocks = 4;

// One block's products for R activation rows added into their sums (arrays the caller keeps in
// registers: never index them by a run-time value, which puts them on the stack).
template <int R, typename Block>
inline void RowsBlock(const Block& block, const int8_t* const (&xq)[R],
                      const float* const (&xd)[R], const float* const (&xs)[R], int64_t b,
                      __m512 (&acc)[R], __m512 (&offset)[R]) {
  // Blocks ahead (into the next group at the end: groups are consecutive), so the weights
  // stream at the memory's rate instead of waiting on each load.
  const char* ahead = reinterpret_cast<const char*>(&block + kRepackedPrefetchBlocks);
  for (size_t line = 0; line < sizeof(Block); line += 64) _mm_prefetch(ahead + line, _MM_HINT_T0);
  __m512i q[8];
  LoadRows(block, q);
  const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.d)));
  const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.m)));
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const int8_t* x = xq[r] + 32 * b;
    __m512i sum = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int u = 0; u < 8; ++u) {
      int32_t four;
      std::memcpy(&four, x + 4 * u, 4);
      sum = _mm512_dpbusd_epi32(sum, q[u], _mm512_set1_epi32(four));
    }
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(d, _mm512_set1_ps(xd[r][8 * b])),
                             acc[r]);
    offset[r] = _mm512_fmadd_ps(m, _mm512_set1_ps(xs[r][24 * b]), offset[r]);
  }
}

template <int R, typename Block>
void RowsGroup(const Block* w, int64_t blocks, const Q8Rows& x, int64_t row0, float* out,
               int64_t out_stride) {
  __m512 acc[R], offset[R];
  const int8_t* xq[R];
  const float* xd[R];
  // Each row's whole-block sums d·Σq, the offsets' factor, 24 floats apart (SumIndex).
  const float* xs[R];
  for (int r = 0; r < R; ++r) {
    xq[r] = x.q + 32 * (row0 + r) * x.stride;
    xd[r] = x.scales + 8 * (row0 + r) * x.stride;
    xs[r] = x.sums + SumIndex(row0 + r, 0, 2, x.stride);
    acc[r] = offset[r] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < blocks; ++b) RowsBlock<R>(w[b], xq, xd, xs, b, acc, offset);
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(out + (row0 + r) * out_stride, _mm512_add_ps(acc[r], offset[r]));
  }
}

template <typename Block>
void RowsRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  using Group = void (*)(const Block*, int64_t, const Q8Rows&, int64_t, float*, int64_t);
  static constexpr Group kGroups[kRepackedRows + 1] = {
      nullptr,          RowsGroup<1, Block>, RowsGroup<2, Block>, RowsGroup<3, Block>,
      RowsGroup<4, Block>, RowsGroup<5, Block>, RowsGroup<6, Block>, RowsGroup<7, Block>,
      RowsGroup<8, Block>};
  const Block* w = static_cast<const Block*>(p.w);
  const int64_t blocks = p.x.chunks;
  for (int64_t n = n_begin; n < n_end; n += 16) {
    const Block* group = w + (n / 16) * blocks;
    float* out = p.out + n;
    for (int64_t m0 = 0; m0 < p.m; m0 += kRepackedRows) {
      kGroups[std::min<int64_t>(kRepackedRows, p.m - m0)](group, blocks, p.x, m0, out,
                                                          p.out_stride);
    }
  }
}

}  // namespace

void RepackedDotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  if (p.w_type == WeightType::kQ8x16) return RowsRange<Q8x16Block>(p, n_begin, n_end);
  RowsRange<Q4x16Block>(p, n_begin, n_end);
}

void Q8DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  DotRange<Isa>(p, n_begin, n_end);
}

void KQuantDotQ8KRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  q8k::KQuantRange<Isa>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::avx512vnni
