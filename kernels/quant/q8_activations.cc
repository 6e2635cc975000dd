#include "kernels/quant/q8_activations.h"

#include <cmath>

namespace arbor::kernels {

float Q8Step(const float* x, int64_t n) {
  float amax = 0.0f;
  for (int64_t j = 0; j < n; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  return amax / 127.0f;
}

void QuantizeQ8RowRef(const float* x, int64_t row, const Q8Rows& out) {
  for (int64_t c = 0; c < out.chunks; ++c) {
    const float* xc = x + 32 * c;
    const float d = Q8Step(xc, 32);
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    const int64_t at = row * out.stride + c;
    int8_t* q = out.q + 32 * at;
    int sums[2] = {0, 0};
    for (int j = 0; j < 32; ++j) {
      // nearbyint: round half to even, as the vector quantizers' cvtps2dq does.
      q[j] = static_cast<int8_t>(std::nearbyint(xc[j] * inverse));
      sums[j / 16] += q[j];
    }
    for (int l = 0; l < 8; ++l) out.scales[8 * at + l] = d;
    for (int h = 0; h < 2; ++h) {
      out.sums[SumIndex(row, c, h, out.stride)] = d * static_cast<float>(sums[h]);
    }
    out.sums[SumIndex(row, c, 2, out.stride)] = d * static_cast<float>(sums[0] + sums[1]);
    if (out.q_sums != nullptr) out.q_sums[at] = sums[0] + sums[1];
  }
}

}  // namespace arbor::kernels
