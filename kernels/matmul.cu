#include <cuda_bf16.h>

#include <algorithm>

#include "kernels/matmul_cuda.h"

namespace arbor::kernels {
namespace {

// One block row per output row, threads over columns: reads and writes are coalesced.
__global__ void GatherBf16Kernel(GatherBf16Params p) {
  const int64_t r = blockIdx.y;
  const int64_t src_row = p.rows != nullptr ? p.rows[r] : r;
  const float* src = p.src + src_row * p.src_stride;
  uint16_t* dst = p.dst + r * p.dim;
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < p.dim;
       i += int64_t{gridDim.x} * blockDim.x) {
    dst[i] = __bfloat16_as_ushort(__float2bfloat16_rn(src[i]));
  }
}

}  // namespace

cudaError_t LaunchGatherBf16(const GatherBf16Params& p, cudaStream_t stream) {
  if (p.num_rows == 0 || p.dim == 0) return cudaSuccess;
  if (p.num_rows > 65535) return cudaErrorInvalidValue;  // gridDim.y limit
  constexpr int kThreads = 256;
  const int64_t blocks_x = std::min<int64_t>((p.dim + kThreads - 1) / kThreads, 64);
  GatherBf16Kernel<<<dim3(blocks_x, p.num_rows), kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace arbor::kernels
