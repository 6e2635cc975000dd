#include "kernels/quant/quant_matmul_twin.h"

#include <vector>

#include "kernels/quant/q8_activations.h"
#include "kernels/quant/q8k_activations.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_matmul.h"

namespace arbor::kernels {
namespace {

// out[i, j] = Σ_c x̃[i, c] · w[j, c] in float64: x̃ the quantized activations as doubles, [m, k]
// dense, and w each weight row dequantized.
void MultiplyDequantized(const MatmulParams& p, const std::vector<double>& x, double* out) {
  const model::DType dtype = FileDType(p.w_type);
  const int64_t row_bytes =
      p.k / model::Layout(dtype).block_elements * model::Layout(dtype).block_bytes;
  std::vector<float> w(p.k);
  for (int64_t j = 0; j < p.n; ++j) {
    DequantizeRow(dtype, static_cast<const char*>(p.w) + j * row_bytes, p.k, w.data());
    for (int64_t i = 0; i < p.m; ++i) {
      double sum = 0;
      for (int64_t c = 0; c < p.k; ++c) sum += x[i * p.k + c] * double{w[c]};
      out[i * p.n + j] = sum;
    }
  }
}

}  // namespace

void QuantMatmulQ8Twin(const MatmulParams& p, double* out) {
  const int64_t chunks = p.k / kQuantBlock;
  std::vector<int8_t> q(p.m * chunks * 32);
  std::vector<float> scales(p.m * chunks * 8), sums(SumsSize(p.m, chunks));
  const Q8Rows rows{q.data(), scales.data(), sums.data(), nullptr, chunks, chunks};
  std::vector<double> x(p.m * p.k);
  for (int64_t i = 0; i < p.m; ++i) {
    QuantizeQ8RowRef(p.x + i * p.x_stride, i, rows);
    for (int64_t c = 0; c < p.k; ++c) {
      const int64_t chunk = i * chunks + c / 32;
      x[i * p.k + c] = double{scales[8 * chunk]} * q[32 * chunk + c % 32];
    }
  }
  MultiplyDequantized(p, x, out);
}

void QuantMatmulQ8KTwin(const MatmulParams& p, double* out) {
  const int64_t blocks = p.k / kSuperBlock;
  std::vector<int8_t> q(p.k);
  std::vector<float> d(blocks);
  std::vector<int16_t> sums(16 * blocks);
  std::vector<float> scaled_sums(16 * blocks);
  std::vector<double> x(p.m * p.k);
  for (int64_t i = 0; i < p.m; ++i) {
    QuantizeQ8KRow(p.x + i * p.x_stride,
                   {q.data(), d.data(), sums.data(), scaled_sums.data(), nullptr, blocks});
    for (int64_t c = 0; c < p.k; ++c) x[i * p.k + c] = double{d[c / kSuperBlock]} * q[c];
  }
  MultiplyDequantized(p, x, out);
}

}  // namespace arbor::kernels
