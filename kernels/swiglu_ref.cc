#include <cmath>

#include "kernels/cpu_simd.h"
#include "kernels/swiglu.h"

namespace arbor::kernels {
namespace {

// silu(g)·up = g·σ(g)·up, σ from e^−|g| ≤ 1 (never overflows): 1 / (1 + t) for g ≥ 0 and
// t / (1 + t) below.
inline float SiluTimes(float g, float up) { return g / (1.0f + std::exp(-g)) * up; }

#ifdef ARBOR_CPU_AVX2
inline __m256 SiluTimes(__m256 g, __m256 up) {
  const __m256 magnitude = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), g);
  const __m256 t = simd::ExpNonPositive(_mm256_sub_ps(_mm256_setzero_ps(), magnitude));
  const __m256 inverse =
      _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), t));
  const __m256 negative = _mm256_cmp_ps(g, _mm256_setzero_ps(), _CMP_LT_OQ);
  const __m256 sigma = _mm256_blendv_ps(inverse, _mm256_mul_ps(t, inverse), negative);
  return _mm256_mul_ps(_mm256_mul_ps(g, sigma), up);
}
#endif
#ifdef ARBOR_CPU_AVX512
// The eight-lane form's operations in sixteen lanes (the same bits).
inline __m512 SiluTimes(__m512 g, __m512 up) {
  const __m512 magnitude = _mm512_abs_ps(g);
  const __m512 t = simd::ExpNonPositive16(_mm512_sub_ps(_mm512_setzero_ps(), magnitude));
  const __m512 inverse =
      _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(_mm512_set1_ps(1.0f), t));
  const __mmask16 negative = _mm512_cmp_ps_mask(g, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512 sigma = _mm512_mask_blend_ps(negative, inverse, _mm512_mul_ps(t, inverse));
  return _mm512_mul_ps(_mm512_mul_ps(g, sigma), up);
}
#endif

}  // namespace

void SwigluRef(const SwigluParams& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* gate = p.gate + r * p.gate_stride;
    const float* up = p.up + r * p.up_stride;
    float* out = p.out + r * p.out_stride;
    int64_t i = 0;
#ifdef ARBOR_CPU_AVX512
    for (; i + 16 <= p.dim; i += 16) {
      _mm512_storeu_ps(out + i, SiluTimes(_mm512_loadu_ps(gate + i), _mm512_loadu_ps(up + i)));
    }
#endif
#ifdef ARBOR_CPU_AVX2
    for (; i + 8 <= p.dim; i += 8) {
      _mm256_storeu_ps(out + i, SiluTimes(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
    }
#endif
    for (; i < p.dim; ++i) out[i] = SiluTimes(gate[i], up[i]);
  }
}

}  // namespace arbor::kernels
