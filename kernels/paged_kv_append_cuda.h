// CUDA launcher for the paged KV append (see paged_kv_append.h and paged_kv.h).
#ifndef ARBOR_KERNELS_PAGED_KV_APPEND_CUDA_H_
#define ARBOR_KERNELS_PAGED_KV_APPEND_CUDA_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/paged_kv_append.h"

namespace arbor::kernels {

// Pointers in `params` (the batch arrays included) are device pointers; `num_tokens` is
// batch.q_start[num_seqs], which the host knows without reading the device. Async on `stream`.
cudaError_t LaunchPagedKvAppend(const PagedKvAppendParams& params, int64_t num_tokens,
                                cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_PAGED_KV_APPEND_CUDA_H_
