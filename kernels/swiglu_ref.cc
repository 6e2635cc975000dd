#include <cmath>

#include "kernels/swiglu.h"

namespace arbor::kernels {

void SwigluRef(const SwigluParams& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* gate = p.gate + r * p.gate_stride;
    const float* up = p.up + r * p.up_stride;
    float* out = p.out + r * p.out_stride;
    for (int64_t i = 0; i < p.dim; ++i) {
      const float g = gate[i];
      out[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
  }
}

}  // namespace arbor::kernels
