// Small AVX2/FMA helpers shared by the CPU ops (matmul, attention), with scalar fallbacks when
// the build does not target AVX2. Plain C++ loops with float reductions are not vectorised by
// the compiler (it may not reassociate the sum), so the hot dot products are written here once.
#ifndef ARBOR_KERNELS_CPU_SIMD_H_
#define ARBOR_KERNELS_CPU_SIMD_H_

#include <cstdint>

#include "base/bf16.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define ARBOR_CPU_AVX2 1
#endif

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
#endif

// Σ a[i]·b[i] in fp32.
inline float Dot(const float* a, const float* b, int64_t n) {
  int64_t i = 0;
  float sum = 0.0f;
#ifdef ARBOR_CPU_AVX2
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  }
  sum = HorizontalSum(_mm256_add_ps(acc0, acc1));
#endif
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace arbor::kernels::simd

#endif  // ARBOR_KERNELS_CPU_SIMD_H_
