#include <cmath>

#include "kernels/cpu/cpu_simd.h"
#include "kernels/rms_norm.h"

namespace arbor::kernels {

void RmsNormRef(const RmsNormParams& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* x = p.x + r * p.x_stride;
    float* out = p.out + r * p.out_stride;
    const float* src = x;
    if (p.residual != nullptr) {
      float* residual = p.residual + r * p.residual_stride;
      for (int64_t i = 0; i < p.dim; ++i) residual[i] += x[i];
      src = residual;
    }
    const double sum_sq = simd::SumSquares(src, p.dim);
    const float inv_rms =
        static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(p.dim) + p.eps));
    for (int64_t i = 0; i < p.dim; ++i) out[i] = src[i] * inv_rms * p.weight[i];
  }
}

}  // namespace arbor::kernels
