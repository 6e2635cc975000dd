// CUDA launchers for RoPE (see rope.h): the per-step cos/sin table and the in-place rotation.
// RopeInvFreq stays on the host (once per model load).
#ifndef ARBOR_KERNELS_ROPE_CUDA_H_
#define ARBOR_KERNELS_ROPE_CUDA_H_

#include <cuda_runtime_api.h>

#include "kernels/rope.h"

namespace arbor::kernels {

// Pointers in `params` are device pointers. Asynchronous on `stream`.
cudaError_t LaunchRopeCosSin(const RopeCosSinParams& params, cudaStream_t stream);
cudaError_t LaunchRope(const RopeParams& params, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_ROPE_CUDA_H_
