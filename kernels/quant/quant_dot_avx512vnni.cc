// The quantized matmul's 8-bit-activation kernels for AVX-512 (F, BW, VL) with VNNI: vpdpbusd
// on zmm covers two 32-weight chunks per instruction, halving the per-row work of AVX-VNNI.
// Compiled with those extensions only (kernels/CMakeLists.txt).
#define ARBOR_QUANT_ISA_NS avx512vnni
#include "kernels/quant/quant_dot_kernel.h"
#include "kernels/quant/quant_dot_q8k_kernel.h"

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

}  // namespace

void Q8DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  DotRange<Isa>(p, n_begin, n_end);
}

void KQuantDotQ8KRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  q8k::KQuantRange<Isa>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::avx512vnni
