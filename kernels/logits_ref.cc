#include <algorithm>
#include <vector>

#include "kernels/logits.h"
#include "kernels/matmul.h"

namespace arbor::kernels {

void LogitsRef(const LogitsParams& p, ThreadPool* pool) {
  if (p.num_rows == 0) return;
  std::vector<float> gathered(p.num_rows * p.dim);
  for (int64_t r = 0; r < p.num_rows; ++r) {
    const float* src = p.hidden + int64_t{p.rows[r]} * p.hidden_stride;
    std::copy(src, src + p.dim, gathered.begin() + r * p.dim);
  }
  MatmulRef({.x = gathered.data(),
             .w = p.lm_head,
             .w_type = p.lm_head_type,
             .out = p.out,
             .m = p.num_rows,
             .n = p.vocab,
             .k = p.dim,
             .x_stride = p.dim,
             .out_stride = p.out_stride,
             .activation_quant = p.activation_quant,
             .batch_invariant = p.batch_invariant},
            pool);
}

}  // namespace arbor::kernels
