// CUDA launcher for RMSNorm with the fused residual add (see rms_norm.h for the contract).
#ifndef ARBOR_KERNELS_RMS_NORM_CUDA_H_
#define ARBOR_KERNELS_RMS_NORM_CUDA_H_

#include <cuda_runtime_api.h>

#include "kernels/rms_norm.h"

namespace arbor::kernels {

// Pointers in `params` are device pointers. Asynchronous on `stream`.
cudaError_t LaunchRmsNorm(const RmsNormParams& params, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_RMS_NORM_CUDA_H_
