#include <cmath>

#include "kernels/cpu/cpu_simd.h"
#include "kernels/swiglu.h"

namespace arbor::kernels {
namespace {

// silu(g)·up = g·σ(g)·up, σ from e^−|g| ≤ 1 (never overflows): 1 / (1 + t) for g ≥ 0 and
// t / (1 + t) below.
inline float SiluTimes(float g, float up) { return g / (1.0f + std::exp(-g)) * up; }

#ifdef ARBOR_CPU_AVX2
// The same in the lanes of L (simd::Lanes8, Lanes16: the same bits in both).
template <typename L>
inline typename L::V SiluTimes(typename L::V g, typename L::V up) {
  const typename L::V t = simd::ExpNonPositiveIn<L>(L::Sub(L::Zero(), L::Abs(g)));
  const typename L::V inverse = L::Div(L::Set1(1.0f), L::Add(L::Set1(1.0f), t));
  const typename L::V sigma = L::IfNegative(g, L::Mul(t, inverse), inverse);
  return L::Mul(L::Mul(g, sigma), up);
}

// Elements [i, end of the row's whole vectors of L) of a row.
template <typename L>
int64_t SiluTimesVectors(const float* gate, const float* up, float* out, int64_t i, int64_t dim) {
  for (; i + L::kWidth <= dim; i += L::kWidth) {
    L::Store(out + i, SiluTimes<L>(L::Load(gate + i), L::Load(up + i)));
  }
  return i;
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
    i = SiluTimesVectors<simd::Lanes16>(gate, up, out, i, p.dim);
#endif
#ifdef ARBOR_CPU_AVX2
    i = SiluTimesVectors<simd::Lanes8>(gate, up, out, i, p.dim);
#endif
    for (; i < p.dim; ++i) out[i] = SiluTimes(gate[i], up[i]);
  }
}

}  // namespace arbor::kernels
