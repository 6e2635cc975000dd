// CUDA launcher for the embedding lookup (see embedding.h for the contract).
#ifndef ARBOR_KERNELS_EMBEDDING_CUDA_H_
#define ARBOR_KERNELS_EMBEDDING_CUDA_H_

#include <cuda_runtime_api.h>

#include "kernels/embedding.h"

namespace arbor::kernels {

// Pointers in `params` are device pointers. Asynchronous on `stream`.
cudaError_t LaunchEmbedding(const EmbeddingParams& params, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_EMBEDDING_CUDA_H_
