// RMSNorm of Llama, optionally fused with the residual add that precedes it:
//   if residual:  residual += x;  out = residual / rms(residual) * weight
//   else:         out = x / rms(x) * weight,   rms(v) = sqrt(mean(v²) + eps)
// Fusing saves one pass over the hidden state per norm (two per layer).
//
// Framework-free: shared by the CPU reference (rms_norm_ref.cc) and a CUDA kernel.
#ifndef ARBOR_KERNELS_RMS_NORM_H_
#define ARBOR_KERNELS_RMS_NORM_H_

#include <cstdint>

namespace arbor::kernels {

struct RmsNormParams {
  const float* x = nullptr;   // [rows, dim], row i at x + i * x_stride.
  float* residual = nullptr;  // Optional [rows, dim] (stride residual_stride); updated in place.
  const float* weight = nullptr;  // [dim]
  float* out = nullptr;           // [rows, dim], row i at out + i * out_stride; may alias x.
  int64_t rows = 0;
  int64_t dim = 0;
  int64_t x_stride = 0;
  int64_t residual_stride = 0;
  int64_t out_stride = 0;
  float eps = 1e-5f;
};

// CPU reference; fp32 with a double sum of squares.
void RmsNormRef(const RmsNormParams& params);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_RMS_NORM_H_
