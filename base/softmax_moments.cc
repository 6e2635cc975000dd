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

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

SoftmaxMoments SoftmaxMoments::OfChunk(const float* x, int64_t n) {
  // Whole vectors, then the tail padded with −inf, which adds nothing to either pass.
  const int64_t whole = n / kLanes * kLanes;
  const Floats tail = Tail(x, whole, n, kNegInf);
  const float chunk_max = MaxOf(x, n);
  SoftmaxMoments chunk;
  if (chunk_max == kNegInf) return chunk;  // Nothing finite.
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
  chunk.max = chunk_max;
  for (int lane = 0; lane < kLanes; ++lane) {
    chunk.sum += s0[lane];
    chunk.sum_x += s1[lane];
    chunk.sum_xx += s2[lane];
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
