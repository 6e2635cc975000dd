// The prefix half of cascade attention (paged_attention_cuda.h's CascadeGroups), launched by
// LaunchPagedAttention before the plain kernel; kept apart because its work is shaped by groups
// of queries, not by single queries. Include only from the attention's .cu files.
#ifndef ARBOR_KERNELS_PAGED_ATTENTION_CASCADE_CUDA_H_
#define ARBOR_KERNELS_PAGED_ATTENTION_CASCADE_CUDA_H_

#include <cuda_runtime_api.h>

#include "kernels/paged_attention_cuda.h"

namespace arbor::kernels {

// For every group, kv head and prefix split: the partial (unnormalised output, max, sum) of each
// member query head over its split of the group's prefix, written to the workspace as partial
// rows launch.num_splits + split of each member token (and, for members asking for them, the
// prefix keys' scaled scores). Asynchronous on `stream`.
cudaError_t LaunchCascadePrefix(const PagedAttentionParams& params,
                                const PagedAttentionLaunch& launch, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_PAGED_ATTENTION_CASCADE_CUDA_H_
