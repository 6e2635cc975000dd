// CUDA launcher for the SwiGLU kernel (see swiglu.h for the contract).
#ifndef ARBOR_KERNELS_SWIGLU_CUDA_H_
#define ARBOR_KERNELS_SWIGLU_CUDA_H_

#include <cuda_runtime_api.h>

#include "kernels/swiglu.h"

namespace arbor::kernels {

// Pointers in `params` are device pointers. Asynchronous on `stream`.
cudaError_t LaunchSwiglu(const SwigluParams& params, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_SWIGLU_CUDA_H_
