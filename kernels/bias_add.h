// Bias of a projection: out[r, i] += bias[i] for every row — the q, k and v biases of Qwen2's
// attention, added after their matmuls and before RoPE.
//
// Framework-free: the params struct is shared by the CPU reference (bias_add_ref.cc) and the CUDA
// kernel (bias_add.cu), and one test compares them.
#ifndef ARBOR_KERNELS_BIAS_ADD_H_
#define ARBOR_KERNELS_BIAS_ADD_H_

#include <cstdint>

namespace arbor::kernels {

struct BiasAddParams {
  float* x = nullptr;           // [rows, dim], row r at x + r * stride; updated in place.
  const float* bias = nullptr;  // [dim]
  int64_t rows = 0;
  int64_t dim = 0;
  int64_t stride = 0;  // Elements between rows, >= dim.
};

// CPU reference, fp32 (one rounding per element, as the kernel).
void BiasAddRef(const BiasAddParams& params);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_BIAS_ADD_H_
