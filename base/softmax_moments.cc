#include "base/softmax_moments.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/vector_math.h"

namespace arbor::base {
namespace {

using vector_math::Doubles;
using vector_math::ExpNonPositive;
using vector_math::Floats;
using vector_math::Ints;
using vector_math::kLanes;
using vector_math::Load;
using vector_math::Tail;
using vector_math::WidenHigh;
using vector_math::WidenLow;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

// Also compiled for AVX2, picked at load time where the CPU has it: a portable build's baseline
// (SSE2) takes 5× as long over a row, and the AVX2 copy computes the same bits (no FMA in either;
// a build for this machine uses its own instructions in both).
#if defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
SoftmaxMoments
SoftmaxMoments::OfChunk(const float* x, int64_t n) {
  // Whole vectors, then the tail padded with −inf, which adds nothing to either pass.
  const int64_t whole = n / kLanes * kLanes;
  const Floats tail = Tail(x, whole, n, kNegInf);
  const float chunk_max = MaxOf(x, n);
  SoftmaxMoments chunk;
  if (chunk_max == kNegInf) return chunk;  // Nothing finite.
  // Per lane of Floats, a float64 sum of each moment (lanes 0–3 in [0], 4–7 in [1]).
  static_assert(kLanes == 8);
  Doubles s0[2]{}, s1[2]{}, s2[2]{};
  auto add = [&](Floats v) {
    const Floats y = v - chunk_max;  // ≤ 0, or −inf.
    const Floats e = ExpNonPositive(y);
    // −inf entries give e = 0; select zeros so 0·inf cannot produce NaN.
    const Ints zero = e == 0.0f;
    const Floats ey = zero ? Floats{} : e * y;
    const Floats eyy = zero ? Floats{} : ey * y;
    s0[0] += WidenLow(e);
    s0[1] += WidenHigh(e);
    s1[0] += WidenLow(ey);
    s1[1] += WidenHigh(ey);
    s2[0] += WidenLow(eyy);
    s2[1] += WidenHigh(eyy);
  };
  for (int64_t i = 0; i < whole; i += kLanes) add(Load(x + i));
  add(tail);
  chunk.max = chunk_max;
  for (int lane = 0; lane < kLanes; ++lane) {
    chunk.sum += s0[lane / 4][lane % 4];
    chunk.sum_x += s1[lane / 4][lane % 4];
    chunk.sum_xx += s2[lane / 4][lane % 4];
  }
  return chunk;
}

double SoftmaxMoments::EntropyNats() const { return std::max(0.0, std::log(sum) - sum_x / sum); }

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

}  // namespace arbor::base
