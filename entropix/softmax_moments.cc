#include "entropix/softmax_moments.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace arbor::entropix {
namespace {

// GCC/Clang vector extensions: one AVX2 register of floats where the target has it (smaller
// registers otherwise), written once for every target. std::exp is a scalar library call and a
// floating-point sum may not be reordered, so plain loops over them stay scalar.
using Floats = float __attribute__((vector_size(32)));
using Ints = int32_t __attribute__((vector_size(32)));
using Doubles = double __attribute__((vector_size(64)));
constexpr int kLanes = sizeof(Floats) / sizeof(float);

Floats Splat(float value) { return Floats{} + value; }

Floats Load(const float* x) {
  Floats v;
  std::memcpy(&v, x, sizeof(v));
  return v;
}

// exp(y) for y ≤ 0 (−inf gives 0) within a few ulp of std::exp, branch-free: exp(y) = 2^k · exp(r)
// with k = round(y / ln 2), r = y − k·ln 2 in [−ln 2 / 2, ln 2 / 2], and Cephes' degree-6
// polynomial for exp(r). Below −87 (where 2^k would leave the normal range) it returns 0, whose
// share of a sum that also holds exp(0) = 1 is under 1e-37.
Floats ExpNonPositive(Floats y) {
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

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// x[whole..n), the part after the last whole vector, padded with `fill`.
Floats Tail(const float* x, int64_t whole, int64_t n, float fill) {
  Floats tail = Splat(fill);
  std::memcpy(&tail, x + whole, static_cast<size_t>(n - whole) * sizeof(float));
  return tail;
}

}  // namespace

void SoftmaxMoments::AddConstant(double value, double count) {
  if (count <= 0.0) return;
  SoftmaxMoments constant;
  constant.max = value;
  constant.sum = count;  // exp(0) each; the shifted value is 0, so Σe·x = Σe·x² = 0.
  Merge(constant);
}

void SoftmaxMoments::AddChunk(const float* x, int64_t n) {
  // Whole vectors, then the tail padded with −inf, which adds nothing to either pass.
  const int64_t whole = n / kLanes * kLanes;
  const Floats tail = Tail(x, whole, n, kNegInf);
  const float chunk_max = MaxOf(x, n);
  if (chunk_max == kNegInf) return;  // Nothing finite.
  Doubles s0{}, s1{}, s2{};
  auto add = [&](Floats v) {
    const Floats y = v - chunk_max;  // ≤ 0, or −inf.
    const Floats e = ExpNonPositive(y);
    // −inf entries give e = 0; select zeros so 0·inf cannot produce NaN.
    const Ints zero = e == 0.0f;
    const Floats ey = zero ? Floats{} : e * y;
    const Floats eyy = zero ? Floats{} : ey * y;
    s0 += __builtin_convertvector(e, Doubles);
    s1 += __builtin_convertvector(ey, Doubles);
    s2 += __builtin_convertvector(eyy, Doubles);
  };
  for (int64_t i = 0; i < whole; i += kLanes) add(Load(x + i));
  add(tail);
  SoftmaxMoments chunk;
  chunk.max = chunk_max;
  for (int lane = 0; lane < kLanes; ++lane) {
    chunk.sum += s0[lane];
    chunk.sum_x += s1[lane];
    chunk.sum_xx += s2[lane];
  }
  Merge(chunk);
}

void SoftmaxMoments::Merge(const SoftmaxMoments& other) {
  if (other.empty()) return;
  if (empty()) {
    *this = other;
    return;
  }
  // Re-express the state with the smaller maximum relative to the larger one:
  // y' = y − d with d = M − m ≥ 0 and weights scaled by exp(−d).
  const SoftmaxMoments& hi = max >= other.max ? *this : other;
  const SoftmaxMoments& lo = max >= other.max ? other : *this;
  const double d = hi.max - lo.max;
  const double c = std::exp(-d);
  if (c == 0.0) {  // The smaller state's weight underflows; skipping it also avoids 0·inf.
    *this = hi;
    return;
  }
  SoftmaxMoments merged;
  merged.max = hi.max;
  merged.sum = hi.sum + c * lo.sum;
  merged.sum_x = hi.sum_x + c * (lo.sum_x - d * lo.sum);
  merged.sum_xx = hi.sum_xx + c * (lo.sum_xx - 2.0 * d * lo.sum_x + d * d * lo.sum);
  *this = merged;
}

double SoftmaxMoments::LogSumExp() const { return max + std::log(sum); }

double SoftmaxMoments::EntropyNats() const {
  return std::max(0.0, std::log(sum) - sum_x / sum);
}

double SoftmaxMoments::VarentropyNats() const {
  const double mean = sum_x / sum;
  return std::max(0.0, sum_xx / sum - mean * mean);
}

int64_t FindNonFinite(const float* x, int64_t n) {
  // One branch-free vector pass for the common all-valid case (NaN < inf is false too); locate
  // the culprit only on failure.
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t whole = n / kLanes * kLanes;
  Ints bad = ~(Tail(x, whole, n, 0.0f) < inf);
  for (int64_t i = 0; i < whole; i += kLanes) bad |= ~(Load(x + i) < inf);
  bool any = false;
  for (int lane = 0; lane < kLanes; ++lane) any |= bad[lane] != 0;
  if (!any) return -1;
  for (int64_t i = 0; i < n; ++i) {
    if (!(x[i] < std::numeric_limits<float>::infinity())) return i;
  }
  return -1;
}

float MaxOf(const float* x, int64_t n) {
  const int64_t whole = n / kLanes * kLanes;
  Floats lane_max = Tail(x, whole, n, kNegInf);
  for (int64_t i = 0; i < whole; i += kLanes) {
    const Floats v = Load(x + i);
    lane_max = v > lane_max ? v : lane_max;
  }
  float best = kNegInf;
  for (int lane = 0; lane < kLanes; ++lane) best = std::max(best, lane_max[lane]);
  return best;
}

}  // namespace arbor::entropix
