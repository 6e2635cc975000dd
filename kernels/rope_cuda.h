// CUDA launchers for RoPE (see rope.h): the per-step cos/sin table and the in-place rotation,
// alone or after a per-head RMSNorm (Qwen3's q/k norms). RopeInvFreq stays on the host (once per
// model load).
#ifndef ARBOR_KERNELS_ROPE_CUDA_H_
#define ARBOR_KERNELS_ROPE_CUDA_H_

#include <cuda_runtime_api.h>

#include "kernels/rope.h"

namespace arbor::kernels {

// Pointers in `params` are device pointers. Asynchronous on `stream`.
cudaError_t LaunchRopeCosSin(const RopeCosSinParams& params, cudaStream_t stream);
cudaError_t LaunchRope(const RopeParams& params, cudaStream_t stream);

// Per-head RMSNorm weights applied before the rotation (model/architecture.h's qk_norm): the first
// q_heads heads of a token scale by q_weight, the rest by k_weight, each [head_dim].
struct HeadNormParams {
  const float* q_weight = nullptr;
  const float* k_weight = nullptr;
  int64_t q_heads = 0;
  float eps = 1e-6f;
};

// Each head of each token normalised as RmsNormRef does it over one head (squares summed in
// double), then rotated as RopeRef: one launch for a token's q and k heads.
cudaError_t LaunchNormRope(const RopeParams& params, const HeadNormParams& norm,
                           cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_ROPE_CUDA_H_
