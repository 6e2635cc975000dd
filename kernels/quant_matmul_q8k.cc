// QuantMatmulQ8K (quant_matmul.h): Q4_K and Q6_K weights at few rows against per-256 activations.
#include <algorithm>
#include <cassert>
#include <vector>

#include "kernels/q8k_activations.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_dot.h"
#include "kernels/quant_matmul.h"
#include "kernels/thread_pool.h"

namespace arbor::kernels {

static_assert(kQ8KMaxRows == 3, "quant_dot_q8k_avx2.cc instantiates 1 to 3 rows");

bool TakesQ8K(const MatmulParams& p) {
  return (p.w_type == WeightType::kQ4_K || p.w_type == WeightType::kQ6_K) && p.m <= kQ8KMaxRows;
}

void QuantMatmulQ8K(const MatmulParams& p, ThreadPool* pool) {
  assert(TakesQ8K(p));
  if (p.m == 0 || p.n == 0) return;
  thread_local std::vector<int8_t> q;
  thread_local std::vector<float> d;
  thread_local std::vector<int16_t> sums;
  const int64_t blocks = p.k / kSuperBlock;
  q.resize(p.m * p.k);
  d.resize(p.m * blocks);
  sums.resize(p.m * blocks * 16);
  Q8KRow rows[kQ8KMaxRows];
  for (int64_t i = 0; i < p.m; ++i) {
    rows[i] = {q.data() + i * p.k, d.data() + i * blocks, sums.data() + i * blocks * 16, blocks};
    QuantizeQ8KRow(p.x + i * p.x_stride, rows[i]);
  }
  const Q8KDotParams dot{p.w, p.w_type, rows, p.m, p.out, p.out_stride};
  if (pool == nullptr) return avx2::KQuantDotQ8KRange(dot, 0, p.n);
  // ~64k multiply-adds per hand-off, as the other matmuls.
  const int64_t grain = std::max<int64_t>(1, 65536 / (p.m * p.k));
  pool->ParallelFor(p.n, grain,
                    [&](int64_t begin, int64_t end) { avx2::KQuantDotQ8KRange(dot, begin, end); });
}

}  // namespace arbor::kernels
