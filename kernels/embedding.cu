#include <cuda_bf16.h>

#include <algorithm>

#include "kernels/embedding_cuda.h"

namespace arbor::kernels {
namespace {

// Grid y: tokens; threads over the row, so each table row is read coalesced.
__global__ void EmbeddingKernel(EmbeddingParams p) {
  const int64_t t = blockIdx.y;
  const int64_t token = p.tokens[t];
  float* out = p.out + t * p.out_stride;
  for (int64_t j = blockIdx.x * blockDim.x + threadIdx.x; j < p.dim;
       j += int64_t{gridDim.x} * blockDim.x) {
    if (p.table_type == WeightType::kF32) {
      out[j] = static_cast<const float*>(p.table)[token * p.dim + j];
    } else {
      const uint16_t bits = static_cast<const uint16_t*>(p.table)[token * p.dim + j];
      out[j] = __bfloat162float(__ushort_as_bfloat16(bits));
    }
  }
}

}  // namespace

cudaError_t LaunchEmbedding(const EmbeddingParams& p, cudaStream_t stream) {
  if (p.num_tokens == 0 || p.dim == 0) return cudaSuccess;
  if (p.num_tokens > 65535) return cudaErrorInvalidValue;  // gridDim.y limit
  constexpr int kThreads = 256;
  const int64_t blocks_x = std::min<int64_t>((p.dim + kThreads - 1) / kThreads, 64);
  EmbeddingKernel<<<dim3(blocks_x, p.num_tokens), kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace arbor::kernels
