// The per-256-activation kernel (quant_dot_q8k_kernel.h) on AVX2: one chunk per vector, up to
// kQ8KMaxRows rows. Compiled with AVX2, FMA and F16C only (kernels/CMakeLists.txt).
#define ARBOR_QUANT_ISA_NS avx2
#include "kernels/quant_dot_q8k_kernel.h"
#include "kernels/quant_matmul.h"

namespace arbor::kernels::avx2 {
namespace {

struct Isa {
  using VI = __m256i;
  using VF = __m256;
  static constexpr int kStep = 1;
  static constexpr int kMaxRows = kQ8KMaxRows;
  static VI Combine(const __m256i* v) { return v[0]; }
  static VI LoadX(const int8_t* q) { return _mm256_loadu_si256(reinterpret_cast<const VI*>(q)); }
  static VI ScaledDot(VI w, VI x, VI s) { return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), s); }
  static VI AddI(VI a, VI b) { return _mm256_add_epi32(a, b); }
  static VI ZeroI() { return _mm256_setzero_si256(); }
  static VF ToFloat(VI v) { return _mm256_cvtepi32_ps(v); }
  static VF Fma(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
  static VF Set1(float f) { return _mm256_set1_ps(f); }
  static VF ZeroF() { return _mm256_setzero_ps(); }
  static float Sum(VF v) { return q8k::Sum256(v); }
};

}  // namespace

void KQuantDotQ8KRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  q8k::KQuantRange<Isa>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::avx2
