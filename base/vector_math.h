// Lane-parallel float math for the row scans of softmax moments and the entropix metrics: the
// vector types, loads, and a branch-free exp for non-positive arguments. Header-only so the loops
// that use it inline it; internal to those scans (the worker and coordinator call the scans, not
// these).
#ifndef ARBOR_BASE_VECTOR_MATH_H_
#define ARBOR_BASE_VECTOR_MATH_H_

#include <bit>
#include <cstdint>
#include <cstring>

namespace arbor::base::vector_math {

// GCC/Clang vector extensions: one AVX2 register of floats where the target has it (smaller
// registers otherwise), written once for every target. std::exp is a scalar library call and a
// floating-point sum may not be reordered, so plain loops over them stay scalar.
using Floats = float __attribute__((vector_size(32)));
using Ints = int32_t __attribute__((vector_size(32)));
constexpr int kLanes = sizeof(Floats) / sizeof(float);
// Half of Floats' lanes widened, one AVX2 register's worth: GCC moves a vector of all eight lanes
// as doubles, wider than any AVX2 register, through memory element by element (a row's moments
// took 1.1–1.5× as long).
using Doubles = double __attribute__((vector_size(32)));
inline Doubles WidenLow(Floats v) {
  return __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), Doubles);
}
inline Doubles WidenHigh(Floats v) {
  return __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), Doubles);
}

inline Floats Splat(float value) { return Floats{} + value; }

inline Floats Load(const float* x) {
  Floats v;
  std::memcpy(&v, x, sizeof(v));
  return v;
}

// exp(y) for y ≤ 0 (−inf gives 0) within a few ulp of std::exp, branch-free: exp(y) = 2^k · exp(r)
// with k = round(y / ln 2), r = y − k·ln 2 in [−ln 2 / 2, ln 2 / 2], and Cephes' degree-6
// polynomial for exp(r). Below −87 (where 2^k would leave the normal range) it returns 0, whose
// share of a sum that also holds exp(0) = 1 is under 1e-37.
inline Floats ExpNonPositive(Floats y) {
  const Floats min = Splat(-87.0f);
  const Floats round = Splat(12582912.0f);  // 1.5 · 2^23: adding it rounds to an integer.
  const Floats clamped = y < min ? min : y;
  const Floats shifted = clamped * 1.44269504088896341f + round;
  const Floats k = shifted - round;
  const Floats r = (clamped - k * 0.693359375f) - k * -2.12194440e-4f;  // ln 2, two parts.
  Floats p = Splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const Floats exp_r = p * r * r + r + 1.0f;
  const Ints k_int = std::bit_cast<Ints>(shifted) - std::bit_cast<Ints>(round);
  const Floats scale = std::bit_cast<Floats>((k_int + 127) << 23);
  return y < min ? Floats{} : exp_r * scale;
}

// The part x[whole..n) after the last whole vector, padded with `fill`.
inline Floats Tail(const float* x, int64_t whole, int64_t n, float fill) {
  Floats tail = Splat(fill);
  std::memcpy(&tail, x + whole, static_cast<size_t>(n - whole) * sizeof(float));
  return tail;
}

// out[i] = exp(x[i] − shift) for x[i] ≤ shift (a log-normaliser), within a few ulp of std::exp.
inline void ExpShifted(const float* x, float shift, float* out, int64_t n) {
  const int64_t whole = n / kLanes * kLanes;
  for (int64_t i = 0; i < whole; i += kLanes) {
    const Floats e = ExpNonPositive(Load(x + i) - shift);
    std::memcpy(out + i, &e, sizeof(e));
  }
  const Floats e = ExpNonPositive(Tail(x, whole, n, shift) - shift);
  std::memcpy(out + whole, &e, static_cast<size_t>(n - whole) * sizeof(float));
}

}  // namespace arbor::base::vector_math

#endif  // ARBOR_BASE_VECTOR_MATH_H_
