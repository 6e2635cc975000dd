// SwiGLU activation of the Llama MLP: out = silu(gate) ⊙ up, silu(x) = x / (1 + e^-x).
//
// Framework-free: the params struct is shared by the CPU reference (swiglu_ref.cc) and the CUDA
// kernel (swiglu.cu), and one test compares them.
#ifndef ARBOR_KERNELS_SWIGLU_H_
#define ARBOR_KERNELS_SWIGLU_H_

#include <cstdint>

namespace arbor::kernels {

struct SwigluParams {
  const float* gate = nullptr;  // [rows, dim], row i at gate + i * gate_stride.
  const float* up = nullptr;    // [rows, dim], row i at up + i * up_stride.
  float* out = nullptr;         // [rows, dim], row i at out + i * out_stride; may alias gate/up.
  int64_t rows = 0;
  int64_t dim = 0;
  int64_t gate_stride = 0;  // Elements between rows, >= dim.
  int64_t up_stride = 0;
  int64_t out_stride = 0;
};

// CPU reference, fp32.
void SwigluRef(const SwigluParams& params);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_SWIGLU_H_
