// Small AVX2/FMA helpers shared by the CPU ops (matmul, attention), with scalar fallbacks when
// the build does not target AVX2. Plain C++ loops with float reductions are not vectorised by
// the compiler (it may not reassociate the sum), so the hot dot products and weighted sums are
// written here once.
#ifndef ARBOR_KERNELS_CPU_CPU_SIMD_H_
#define ARBOR_KERNELS_CPU_CPU_SIMD_H_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>

#include "base/bf16.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define ARBOR_CPU_AVX2 1
#if defined(__AVX512F__)
// 512-bit forms of the attention helpers below, each giving its 256-bit form's bits: a vector
// holds two 8-lane slices that the 256-bit form keeps in two registers, never one 16-lane sum.
#define ARBOR_CPU_AVX512 1
#endif
#endif

// GCC 12's AVX-512 intrinsics take their unused lanes from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports wherever one is inlined (the quantized kernels' files turn it
// off on their command lines, kernels/CMakeLists.txt); here for the header's includers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace arbor::kernels::simd {

inline float LoadScalar(const float* w) { return *w; }
inline float LoadScalar(const uint16_t* w) { return base::Bf16ToFloat(*w); }

#ifdef ARBOR_CPU_AVX2
inline __m256 Load8(const float* w) { return _mm256_loadu_ps(w); }
inline __m256 Load8(const uint16_t* w) {
  // bf16 is the top half of an fp32: widen to 32 bits and shift into place (exact).
  const __m128i half = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(half), 16));
}
inline float HorizontalSum(__m256 v) {
  const __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 pairs = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}
// Lane i of the result is the sum of v[i]'s eight lanes, ((0+1)+(2+3)) + ((4+5)+(6+7)): four
// reductions for the price of about one, and each vector's sum independent of the others'.
inline __m128 TransposeSum4(const __m256 (&v)[4]) {
  // hadd(a, b) = [a0+a1, a2+a3, b0+b1, b2+b3 | a4+a5, a6+a7, b4+b5, b6+b7], so low4 holds
  // v0..v3 over lanes 0-3 in its low half and over lanes 4-7 in its high half.
  const __m256 low4 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
  return _mm_add_ps(_mm256_castps256_ps128(low4), _mm256_extractf128_ps(low4, 1));
}
#endif

// Σ a[i]·b[i] in fp32; `b` is fp32 or bf16 (a KV row of either dtype).
template <typename T>
inline float Dot(const float* a, const T* b, int64_t n) {
  int64_t i = 0;
  float sum = 0.0f;
#ifdef ARBOR_CPU_AVX2
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), Load8(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), Load8(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), Load8(b + i), acc0);
  }
  sum = HorizontalSum(_mm256_add_ps(acc0, acc1));
#endif
  for (; i < n; ++i) sum += a[i] * LoadScalar(b + i);
  return sum;
}

#ifdef ARBOR_CPU_AVX2
// `v` kept in a register: GCC otherwise folds a vector's load into each instruction that uses
// it, and on a Zen 3 FMAs that each loaded their shared operand ran 1.4–1.7× slower than FMAs
// taking it from one load in a register (the weighted sums of V over keys in L1, four heads: 1.4×).
template <typename V>
[[gnu::always_inline]] inline V Held(V v) {
  asm("" : "+v"(v));
  return v;
}

// The float vectors of the exponential, SwiGLU and the weighted sums: eight lanes, and where
// AVX-512 is there sixteen, each lane's operations the same in both (so both give the same bits).
struct Lanes8 {
  using V = __m256;
  static constexpr int kWidth = 8;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Set1(float f) { return _mm256_set1_ps(f); }
  template <typename T>
  static V Load(const T* row) {
    return Load8(row);
  }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V Div(V a, V b) { return _mm256_div_ps(a, b); }
  static V Abs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  // Where x < 0 `negative`, else `otherwise`.
  static V IfNegative(V x, V negative, V otherwise) {
    return _mm256_blendv_ps(otherwise, negative, _mm256_cmp_ps(x, Zero(), _CMP_LT_OQ));
  }
  static V Max(V a, V b) { return _mm256_max_ps(a, b); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V Fnma(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
  static V Round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^k for whole k in range, as the float's exponent bits.
  static V Pow2(V k) {
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23));
  }
  // v where x ≥ bound, else 0.
  static V ZeroBelow(V v, V x, float bound) {
    return _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(bound), _CMP_LT_OQ), v);
  }
  static void Store(float* out, V v) { _mm256_storeu_ps(out, v); }
};
#endif

#ifdef ARBOR_CPU_AVX512
inline __m512 Load16(const float* w) { return _mm512_loadu_ps(w); }
inline __m512 Load16(const uint16_t* w) {
  const __m256i half = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(half), 16));
}
inline __m256 High8(__m512 v) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}
// Eight values of row a in the low half, eight of row b in the high half.
inline __m512 LoadTwo8(const float* a, const float* b) {
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm256_loadu_ps(a))),
                         _mm256_castps_pd(_mm256_loadu_ps(b)), 1));
}
inline __m512 LoadTwo8(const uint16_t* a, const uint16_t* b) {
  const __m256i halves = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(halves), 16));
}
struct Lanes16 {
  using V = __m512;
  static constexpr int kWidth = 16;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Set1(float f) { return _mm512_set1_ps(f); }
  template <typename T>
  static V Load(const T* row) {
    return Load16(row);
  }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static V Sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V Mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V Div(V a, V b) { return _mm512_div_ps(a, b); }
  static V Abs(V a) { return _mm512_abs_ps(a); }
  static V IfNegative(V x, V negative, V otherwise) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, Zero(), _CMP_LT_OQ), otherwise, negative);
  }
  static V Max(V a, V b) { return _mm512_max_ps(a, b); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V Fnma(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
  static V Round(V a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static V Pow2(V k) {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127)), 23));
  }
  static V ZeroBelow(V v, V x, float bound) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(bound), _CMP_NLT_UQ), v);
  }
  static void Store(float* out, V v) { _mm512_storeu_ps(out, v); }
};
#endif

#ifdef ARBOR_CPU_AVX2
// e^x for x ≤ 0 in the lanes of L (Cephes' expf): 2^k · e^r with k = round(x·log2 e) and
// r = x − k·ln 2 (ln 2 in two parts, so r is exact to a few ulp), e^r by a degree-6 polynomial;
// within 2 ulp of std::exp. Below ln(FLT_MIN) ≈ −87.34 it gives 0 (std::exp: a subnormal).
template <typename L>
inline typename L::V ExpNonPositiveIn(typename L::V x) {
  constexpr float kLowest = -87.336544f;
  const typename L::V clamped = L::Max(x, L::Set1(kLowest));
  const typename L::V k = L::Round(L::Mul(clamped, L::Set1(1.44269504088896341f)));
  typename L::V r = L::Fnma(k, L::Set1(0.693359375f), clamped);
  r = L::Fnma(k, L::Set1(-2.12194440e-4f), r);
  typename L::V p = L::Set1(1.9875691500e-4f);
  for (float c :
       {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f}) {
    p = L::Fma(p, r, L::Set1(c));
  }
  p = L::Fma(p, L::Mul(r, r), L::Add(r, L::Set1(1.0f)));
  return L::ZeroBelow(L::Mul(p, L::Pow2(k)), x, kLowest);
}
inline __m256 ExpNonPositive(__m256 x) { return ExpNonPositiveIn<Lanes8>(x); }
#ifdef ARBOR_CPU_AVX512
inline __m512 ExpNonPositive16(__m512 x) { return ExpNonPositiveIn<Lanes16>(x); }
#endif
#endif

// Σ x[i]² in double (RMSNorm's), in eight partial sums where AVX2 is there (a scalar chain
// waits on each add's latency), added in one fixed order for a given n.
inline double SumSquares(const float* x, int64_t n) {
  int64_t i = 0;
  double sum = 0.0;
#ifdef ARBOR_CPU_AVX2
  __m256d low = _mm256_setzero_pd(), high = _mm256_setzero_pd();
  for (; i + 8 <= n; i += 8) {
    const __m256d a = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    const __m256d b = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    low = _mm256_fmadd_pd(a, a, low);
    high = _mm256_fmadd_pd(b, b, high);
  }
  alignas(32) double four[4];
  _mm256_store_pd(four, _mm256_add_pd(low, high));
  sum = (four[0] + four[1]) + (four[2] + four[3]);
#endif
  for (; i < n; ++i) sum += double{x[i]} * x[i];
  return sum;
}

// The largest of s[0, n) (n ≥ 1): softmax's shift, a vector loop where std::max_element is a
// chain of scalar compares, in four independent maxima (one would wait on each compare's
// latency: 2.2× slower). Exact whatever the order, so the four may all start from s[0, 8).
inline float Max(const float* s, int64_t n) {
  int64_t j = 0;
  float best = s[0];
#ifdef ARBOR_CPU_AVX2
  if (n >= 8) {
    __m256 m[4];
    for (int u = 0; u < 4; ++u) m[u] = _mm256_loadu_ps(s);
    for (j = 8; j + 32 <= n; j += 32) {
      for (int u = 0; u < 4; ++u) m[u] = _mm256_max_ps(m[u], _mm256_loadu_ps(s + j + 8 * u));
    }
    for (; j + 8 <= n; j += 8) m[0] = _mm256_max_ps(m[0], _mm256_loadu_ps(s + j));
    alignas(32) float eight[8];
    _mm256_store_ps(eight, _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3])));
    for (float v : eight) best = v > best ? v : best;
  }
#endif
  for (; j < n; ++j) best = s[j] > best ? s[j] : best;
  return best;
}

// s[j] = e^(s[j] − max) for j in [0, n) (max ≥ every s[j]: softmax's numerators), and their sum,
// added in one fixed order for a given n.
inline float ExpShifted(float* s, int64_t n, float max) {
  int64_t j = 0;
  float sum = 0.0f;
#ifdef ARBOR_CPU_AVX2
  __m256 total = _mm256_setzero_ps();
#ifdef ARBOR_CPU_AVX512
  for (; j + 16 <= n; j += 16) {
    const __m512 e = ExpNonPositive16(_mm512_sub_ps(_mm512_loadu_ps(s + j), _mm512_set1_ps(max)));
    _mm512_storeu_ps(s + j, e);
    // The two halves added in turn: the eight-lane loop's order.
    total = _mm256_add_ps(total, _mm512_castps512_ps256(e));
    total = _mm256_add_ps(total, High8(e));
  }
#endif
  for (; j + 8 <= n; j += 8) {
    const __m256 e = ExpNonPositive(_mm256_sub_ps(_mm256_loadu_ps(s + j), _mm256_set1_ps(max)));
    _mm256_storeu_ps(s + j, e);
    total = _mm256_add_ps(total, e);
  }
  if (j < n) {  // The last 1–7 through the same lanes, so every value is computed alike.
    float tail[8] = {};
    for (int64_t i = j; i < n; ++i) tail[i - j] = s[i] - max;
    const __m256 valid = _mm256_cmp_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7),
                                       _mm256_set1_ps(static_cast<float>(n - j)), _CMP_LT_OQ);
    const __m256 e = _mm256_and_ps(valid, ExpNonPositive(_mm256_loadu_ps(tail)));
    _mm256_storeu_ps(tail, e);
    for (int64_t i = j; i < n; ++i) s[i] = tail[i - j];
    total = _mm256_add_ps(total, e);
    j = n;
  }
  sum = HorizontalSum(total);
#endif
  for (; j < n; ++j) {
    s[j] = std::exp(s[j] - max);
    sum += s[j];
  }
  return sum;
}

#ifdef ARBOR_CPU_AVX2
// The scores of a tile from G queries' partial sums of its four rows (TransposeSum4), scaled and
// stored for rows [j, j + tile).
template <int G>
inline void StoreTile(const __m256 (&partial)[G][4], int64_t j, int64_t tile, float scale,
                      float* out, int64_t out_stride) {
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const __m128 dots = _mm_mul_ps(TransposeSum4(partial[g]), _mm_set1_ps(scale));
    if (tile == 4) {
      _mm_storeu_ps(out + g * out_stride + j, dots);
    } else {
      float last[4];
      _mm_storeu_ps(last, dots);
      for (int64_t r = 0; r < tile; ++r) out[g * out_stride + j + r] = last[r];
    }
  }
}

// Rows [r0, r0 + R) of a tile (those below `tile`) for G queries, into partial[g][r0 + r].
// Eight dimensions at a time for every row and query, so that each query's slice is loaded once
// per pass rather than once per row; each partial still adds its slices in order. The slices and
// the key rows are held in registers, each loaded once for the FMAs that share it (Held).
template <int G, int R, typename T>
inline void DotRowsPass(const float* a, const T* const* rows, int64_t j, int r0, int64_t tile,
                        int64_t dim, __m256 (&partial)[G][4]) {
  __m256 sums[G][R];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    for (int r = 0; r < R; ++r) sums[g][r] = _mm256_setzero_ps();
  }
  for (int64_t i = 0; i < dim; i += 8) {
    __m256 q[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) q[g] = Held(_mm256_loadu_ps(a + g * dim + i));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      if (r0 + r >= tile) break;
      const __m256 k = Held(Load8(rows[j + r0 + r] + i));
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) sums[g][r] = _mm256_fmadd_ps(q[g], k, sums[g][r]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    for (int r = 0; r < R; ++r) partial[g][r0 + r] = sums[g][r];
  }
}

// DotRows for G queries and the four rows [j, j + tile) (tile ≤ 4; the others count as zero):
// in passes of as many rows as keep G·R sums, G query slices and a key row in the 16 registers
// (four rows up to three queries, else two).
template <int G, typename T>
inline void DotRowsTile(const float* a, const T* const* rows, int64_t j, int64_t tile, int64_t dim,
                        float scale, float* out, int64_t out_stride) {
  constexpr int R = G <= 3 ? 4 : 2;
  __m256 partial[G][4];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    for (int r = 0; r < 4; ++r) partial[g][r] = _mm256_setzero_ps();
  }
  for (int r0 = 0; r0 < 4 && r0 < tile; r0 += R) {
    DotRowsPass<G, R>(a, rows, j, r0, tile, dim, partial);
  }
  StoreTile<G>(partial, j, tile, scale, out, out_stride);
}
#endif

#ifdef ARBOR_CPU_AVX512
// DotRowsTile with two rows per 512-bit vector (rows j + 2h and j + 2h + 1 in its halves, each
// query's slice in both): half the FMAs, each half the 256-bit form's partial sum.
template <int G, typename T>
inline void DotRowsTile16(const float* a, const T* const* rows, int64_t j, int64_t tile,
                          int64_t dim, float scale, float* out, int64_t out_stride) {
  __m512 partial[G][2];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) partial[g][0] = partial[g][1] = _mm512_setzero_ps();
  for (int64_t i = 0; i < dim; i += 8) {
    __m512 q[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      const __m256 slice = _mm256_loadu_ps(a + g * dim + i);
      q[g] = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(slice)));
    }
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      if (2 * h >= tile) break;
      // A missing last row reads the first again; its sums are not stored.
      const __m512 k =
          LoadTwo8(rows[j + 2 * h] + i, rows[j + (2 * h + 1 < tile ? 2 * h + 1 : 0)] + i);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) partial[g][h] = _mm512_fmadd_ps(q[g], k, partial[g][h]);
    }
  }
  __m256 halves[G][4];
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    for (int h = 0; h < 2; ++h) {
      halves[g][2 * h] = _mm512_castps512_ps256(partial[g][h]);
      halves[g][2 * h + 1] = High8(partial[g][h]);
    }
  }
  StoreTile<G>(halves, j, tile, scale, out, out_stride);
}
#endif

// out[g·out_stride + j] = scale · Σ_i a[g·dim + i]·rows[j][i] for g in [0, queries), j in
// [0, n): attention's scores of the queries of one GQA group (consecutive heads) against n K rows
// (fp32 or bf16). Up to four queries at a time read each K row once; four rows at a time, their
// sums reduced together (TransposeSum4). Each score is computed the same way whatever n, its
// row's place and the number of queries, so a query's scores do not depend on how its keys are
// tiled or which heads share the call.
template <typename T>
inline void DotRows(const float* a, int64_t queries, const T* const* rows, int64_t n, int64_t dim,
                    float scale, float* out, int64_t out_stride) {
#ifdef ARBOR_CPU_AVX2
  if (dim % 8 == 0) {
    using Tile =
        void (*)(const float*, const T* const*, int64_t, int64_t, int64_t, float, float*, int64_t);
#ifdef ARBOR_CPU_AVX512
    static constexpr Tile kTiles[] = {DotRowsTile16<1, T>, DotRowsTile16<2, T>, DotRowsTile16<3, T>,
                                      DotRowsTile16<4, T>};
#else
    static constexpr Tile kTiles[] = {DotRowsTile<1, T>, DotRowsTile<2, T>, DotRowsTile<3, T>,
                                      DotRowsTile<4, T>};
#endif
    for (int64_t g = 0; g < queries; g += 4) {
      const Tile tile = kTiles[(queries - g < 4 ? queries - g : 4) - 1];
      for (int64_t j = 0; j < n; j += 4) {
        tile(a + g * dim, rows, j, n - j < 4 ? n - j : 4, dim, scale, out + g * out_stride,
             out_stride);
      }
    }
    return;
  }
#endif
  for (int64_t g = 0; g < queries; ++g) {
    for (int64_t j = 0; j < n; ++j) {
      out[g * out_stride + j] = Dot(a + g * dim, rows[j], dim) * scale;
    }
  }
}

// Weight vectors per pass over the rows at most: with AVX-512 six (two rows of a three-head group
// keep their 64-float sums in 24 of the 32 registers, each row's vector then serving six FMAs:
// 1.15–1.4× three a pass), else four.
#ifdef ARBOR_CPU_AVX512
constexpr int kSumQueries = 6;
#else
constexpr int kSumQueries = 4;
#endif

#ifdef ARBOR_CPU_AVX2
// WeightedRowSum over the V·L::kWidth floats at offset d for G weight vectors: G·V accumulators
// held in registers across all keys, each key's slice read once for all G.
template <typename L, int G, int V, typename T>
inline void WeightedRowSumLanes(const float* w, int64_t w_stride, const T* const* rows, int64_t n,
                                int64_t d, const float* scale, bool resume, float* out,
                                int64_t out_stride) {
  typename L::V acc[G][V];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) {
    for (int u = 0; u < V; ++u) {
      acc[g][u] = resume ? L::Load(out + g * out_stride + d + L::kWidth * u) : L::Zero();
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    typename L::V a[G];
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) a[g] = L::Set1(w[g * w_stride + j]);
#pragma GCC unroll 8
    for (int u = 0; u < V; ++u) {
      typename L::V v = L::Load(rows[j] + d + L::kWidth * u);
      if constexpr (G > 1) v = Held(v);
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) acc[g][u] = L::Fma(a[g], v, acc[g][u]);
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) {
    for (int u = 0; u < V; ++u) {
      L::Store(out + g * out_stride + d + L::kWidth * u,
               scale == nullptr ? acc[g][u] : L::Mul(acc[g][u], L::Set1(scale[g])));
    }
  }
}

// WeightedRowSum for G weight vectors (G ≤ kSumQueries) in slices of up to kVectors vectors of L.
template <typename L, int G, int kVectors, typename T>
inline void WeightedRowSumSlices(const float* w, int64_t w_stride, const T* const* rows, int64_t n,
                                 int64_t dim, const float* scale, bool resume, float* out,
                                 int64_t out_stride) {
  using Lanes = void (*)(const float*, int64_t, const T* const*, int64_t, int64_t, const float*,
                         bool, float*, int64_t);
  static constexpr auto kLanes = []<size_t... V>(std::index_sequence<V...>) {
    return std::array<Lanes, kVectors>{WeightedRowSumLanes<L, G, V + 1, T>...};
  }
  (std::make_index_sequence<kVectors>());
  for (int64_t d = 0; d < dim; d += L::kWidth * kVectors) {
    const int64_t vectors = (dim - d) / L::kWidth < kVectors ? (dim - d) / L::kWidth : kVectors;
    kLanes[vectors - 1](w, w_stride, rows, n, d, scale, resume, out, out_stride);
  }
}

// WeightedRowSum for G weight vectors (G ≤ kSumQueries): slices of as many vectors per sum as the
// registers hold beside the G weights and a row's vector (32 with AVX-512, 16 without).
template <int G, typename T>
inline void WeightedRowSumGroup(const float* w, int64_t w_stride, const T* const* rows, int64_t n,
                                int64_t dim, const float* scale, bool resume, float* out,
                                int64_t out_stride) {
#ifdef ARBOR_CPU_AVX512
  constexpr int kRegisters = 32;
#else
  constexpr int kRegisters = 16;
#endif
  constexpr int kVectors = std::min(8, (kRegisters - 1 - G) / G);
#ifdef ARBOR_CPU_AVX512
  if (dim % 16 == 0) {  // Up to 128 floats per slice.
    return WeightedRowSumSlices<Lanes16, G, kVectors>(w, w_stride, rows, n, dim, scale, resume, out,
                                                      out_stride);
  }
#endif
  WeightedRowSumSlices<Lanes8, G, kVectors>(w, w_stride, rows, n, dim, scale, resume, out,
                                            out_stride);
}
#endif

// out[g·out_stride + d] = scale[g] · Σ_j w[g·w_stride + j]·rows[j][d] for g in [0, queries), d in
// [0, dim): attention's weighted sums of V rows (fp32 or bf16) for the heads of one GQA group.
// Up to 64 floats of each sum (128 with AVX-512) stay in registers while the keys stream by (a
// plain loop would load and store `out` once per key), and up to kSumQueries heads share each row's
// read. Each output value is added in key order whatever the slicing and the heads beside it. In
// parts: with `resume` the sums go on from the values in `out`, and a null `scale` stores them
// unscaled, so the keys can come in consecutive runs (unscaled, resumed, …, scaled) with the same
// bits as in one call.
template <typename T>
inline void WeightedRowSum(const float* w, int64_t w_stride, int64_t queries, const T* const* rows,
                           int64_t n, int64_t dim, const float* scale, float* out,
                           int64_t out_stride, bool resume = false) {
#ifdef ARBOR_CPU_AVX2
  if (dim % 8 == 0) {
    using Group = void (*)(const float*, int64_t, const T* const*, int64_t, int64_t, const float*,
                           bool, float*, int64_t);
    static constexpr auto kGroups = []<size_t... G>(std::index_sequence<G...>) {
      return std::array<Group, kSumQueries>{WeightedRowSumGroup<G + 1, T>...};
    }
    (std::make_index_sequence<kSumQueries>());
    // Up to kSumQueries in one pass, more four at a time (eight as four and four, not six and two).
    const int64_t most = queries <= kSumQueries ? kSumQueries : 4;
    for (int64_t g = 0; g < queries; g += most) {
      kGroups[std::min(queries - g, most) - 1](w + g * w_stride, w_stride, rows, n, dim,
                                               scale == nullptr ? nullptr : scale + g, resume,
                                               out + g * out_stride, out_stride);
    }
    return;
  }
#endif
  for (int64_t g = 0; g < queries; ++g) {
    for (int64_t d = 0; d < dim; ++d) {
      float sum = resume ? out[g * out_stride + d] : 0.0f;
      for (int64_t j = 0; j < n; ++j) sum += w[g * w_stride + j] * LoadScalar(rows[j] + d);
      out[g * out_stride + d] = scale == nullptr ? sum : scale[g] * sum;
    }
  }
}

}  // namespace arbor::kernels::simd

#pragma GCC diagnostic pop

#endif  // ARBOR_KERNELS_CPU_CPU_SIMD_H_
