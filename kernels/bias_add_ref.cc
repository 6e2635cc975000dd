#include "kernels/bias_add.h"

namespace arbor::kernels {

void BiasAddRef(const BiasAddParams& p) {
  for (int64_t r = 0; r < p.rows; ++r) {
    float* row = p.x + r * p.stride;
    for (int64_t i = 0; i < p.dim; ++i) row[i] += p.bias[i];
  }
}

}  // namespace arbor::kernels
