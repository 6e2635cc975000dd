// The per-256-activation kernel (quant_dot_q8k_kernel.h) on AVX-512 (F, BW, VL): two chunks per
// vector, rows in groups of 8 — the many-row form (sibling branches), measured 2× the per-32
// AVX-512 kernel at 8 rows. Compiled with the avx512vnni kernels' flags (kernels/CMakeLists.txt),
// in their namespace (it shares their chunk loaders).
#define ARBOR_QUANT_ISA_NS avx512vnni
#include "kernels/quant_dot_q8k_kernel.h"

namespace arbor::kernels::avx512vnni {
namespace {

struct Isa {
  using VI = __m512i;
  using VF = __m512;
  static constexpr int kStep = 2;
  static constexpr int kMaxRows = 8;
  static VI Combine(const __m256i* v) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(v[0]), v[1], 1);
  }
  static VI LoadX(const int8_t* q) { return _mm512_loadu_si512(q); }
  static VI ScaledDot(VI w, VI x, VI s) { return _mm512_madd_epi16(_mm512_maddubs_epi16(w, x), s); }
  static VI AddI(VI a, VI b) { return _mm512_add_epi32(a, b); }
  static VI ZeroI() { return _mm512_setzero_si512(); }
  static VF ToFloat(VI v) { return _mm512_cvtepi32_ps(v); }
  static VF Fma(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
  static VF Set1(float f) { return _mm512_set1_ps(f); }
  static VF ZeroF() { return _mm512_setzero_ps(); }
  static float Sum(VF v) { return _mm512_reduce_add_ps(v); }
};

}  // namespace

void KQuantDotQ8KRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  q8k::KQuantRange<Isa>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::avx512vnni
