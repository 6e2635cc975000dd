#include "entropix/softmax_moments.h"

#include <algorithm>
#include <cmath>

namespace arbor::entropix {

void SoftmaxMoments::AddConstant(double value, double count) {
  if (count <= 0.0) return;
  SoftmaxMoments constant;
  constant.max = value;
  constant.sum = count;  // exp(0) each; the shifted value is 0, so Σe·x = Σe·x² = 0.
  Merge(constant);
}

void SoftmaxMoments::AddChunk(const float* x, int64_t n) {
  float chunk_max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) chunk_max = std::max(chunk_max, x[i]);
  if (chunk_max == -std::numeric_limits<float>::infinity()) return;  // Nothing finite.
  double s0 = 0.0, s1 = 0.0, s2 = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float y = x[i] - chunk_max;  // ≤ 0, or −inf.
    const float e = std::exp(y);
    // −inf entries give e = 0; select zeros so 0·inf cannot produce NaN.
    const bool zero = e == 0.0f;
    const float ey = zero ? 0.0f : e * y;
    const float eyy = zero ? 0.0f : ey * y;
    s0 += e;
    s1 += ey;
    s2 += eyy;
  }
  SoftmaxMoments chunk;
  chunk.max = chunk_max;
  chunk.sum = s0;
  chunk.sum_x = s1;
  chunk.sum_xx = s2;
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
  // One branch-free pass for the common all-valid case; locate the culprit only on failure.
  bool bad = false;
  for (int64_t i = 0; i < n; ++i) bad |= !(x[i] < std::numeric_limits<float>::infinity());
  if (!bad) return -1;
  for (int64_t i = 0; i < n; ++i) {
    if (!(x[i] < std::numeric_limits<float>::infinity())) return i;
  }
  return -1;
}

}  // namespace arbor::entropix
