// The warp-tiled paged attention kernel, launched by LaunchPagedAttention for the head sizes it
// serves (64 and 128: the Llama family's) unless the launch asks for the block-wide kernel. One
// CTA per (query token, kv head, split) as there, but its 8 warps work apart: each takes 32-key
// tiles of the split in turn (lane j loading key j's row in 16-byte pieces), keeps its own online
// softmax and P·V for the whole GQA group, and the warps merge once at the end — no block-wide
// barrier per tile, so a long context keeps many loads in flight on every SM. Include only from
// the attention's .cu files.
#ifndef ARBOR_KERNELS_PAGED_ATTENTION_WARP_CUDA_H_
#define ARBOR_KERNELS_PAGED_ATTENTION_WARP_CUDA_H_

#include <cuda_runtime_api.h>

#include "kernels/paged_attention_cuda.h"

namespace arbor::kernels {

// Launches it over `grid` (tokens, kv heads, launch.num_splits); writes what the block-wide
// kernel writes (out, or the partial rows, and the last queries' scores). Asynchronous.
cudaError_t LaunchWarpAttention(dim3 grid, const PagedAttentionParams& params,
                                const PagedAttentionLaunch& launch, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_PAGED_ATTENTION_WARP_CUDA_H_
