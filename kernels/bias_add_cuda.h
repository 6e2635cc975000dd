// CUDA launcher for the bias add (see bias_add.h for the contract).
#ifndef ARBOR_KERNELS_BIAS_ADD_CUDA_H_
#define ARBOR_KERNELS_BIAS_ADD_CUDA_H_

#include <cuda_runtime_api.h>

#include "kernels/bias_add.h"

namespace arbor::kernels {

// Pointers in `params` are device pointers. Asynchronous on `stream`.
cudaError_t LaunchBiasAdd(const BiasAddParams& params, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_BIAS_ADD_CUDA_H_
