#include "kernels/quant/q8k_activations.h"

#include <cmath>
#include <cstring>

#include "kernels/quant/q8_activations.h"

namespace arbor::kernels {

void QuantizeQ8KRow(const float* x, const Q8KRow& out) {
  for (int64_t b = 0; b < out.blocks; ++b) {
    const float* xb = x + 256 * b;
    const float d = Q8Step(xb, 256);
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    int8_t* q = out.q + 256 * b;
    for (int s = 0; s < 16; ++s) {
      int sum = 0;
      for (int j = 16 * s; j < 16 * s + 16; ++j) {
        q[j] = static_cast<int8_t>(std::nearbyint(xb[j] * inverse));  // Half to even.
        sum += q[j];
      }
      out.sums[16 * b + s] = static_cast<int16_t>(sum);  // |sum| ≤ 16·127.
      out.scaled_sums[16 * b + s] = d * static_cast<float>(sum);
    }
    out.d[b] = d;
  }
}

void PairBiasedQ8KRow(const Q8KRow& out) {
  for (int64_t c = 0; c < 8 * out.blocks; ++c) {  // Each 32 values: dwords 0, 4, 1, 5, 2, 6, 3, 7.
    for (int i = 0; i < 8; ++i) {
      uint32_t four;
      std::memcpy(&four, out.q + 32 * c + 4 * (i / 2) + 16 * (i % 2), 4);
      four ^= 0x80808080u;  // Each byte + 128, as unsigned.
      std::memcpy(out.biased_pairs + 32 * c + 4 * i, &four, 4);
    }
  }
}

}  // namespace arbor::kernels
