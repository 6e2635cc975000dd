#include <algorithm>

#include "kernels/bias_add_cuda.h"

namespace arbor::kernels {
namespace {

// One thread per element over a 2-D grid (x: columns, y: rows), so strides stay per row.
__global__ void BiasAddKernel(BiasAddParams p) {
  const int64_t r = blockIdx.y;
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < p.dim;
       i += int64_t{gridDim.x} * blockDim.x) {
    p.x[r * p.stride + i] += p.bias[i];
  }
}

}  // namespace

cudaError_t LaunchBiasAdd(const BiasAddParams& params, cudaStream_t stream) {
  if (params.rows == 0 || params.dim == 0) return cudaSuccess;
  if (params.rows > 65535) return cudaErrorInvalidValue;  // gridDim.y limit
  constexpr int kThreads = 256;
  const int64_t blocks_x = std::min<int64_t>((params.dim + kThreads - 1) / kThreads, 1024);
  BiasAddKernel<<<dim3(blocks_x, params.rows), kThreads, 0, stream>>>(params);
  return cudaGetLastError();
}

}  // namespace arbor::kernels
