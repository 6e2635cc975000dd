// CUDA side of the dense matmuls (matmul.h, logits.h): the GEMM itself runs in cuBLASLt through
// CudaContext (cuda_context.h); this header holds the kernel that feeds it. The GEMM reads bf16
// activations beside bf16 weights (cuBLASLt has no fp32 × bf16 mode), so fp32 activation rows
// are narrowed once per matmul — gathered at the same time for the logits, which only project
// each batch row's last token.
#ifndef ARBOR_KERNELS_MATMUL_CUDA_H_
#define ARBOR_KERNELS_MATMUL_CUDA_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace arbor::kernels {

struct GatherBf16Params {
  const float* src = nullptr;     // [*, dim], row i at src + i·src_stride.
  const int32_t* rows = nullptr;  // Optional [num_rows] row indices into src; null: 0, 1, ...
  uint16_t* dst = nullptr;        // [num_rows, dim] contiguous, bf16 bit patterns.
  int64_t num_rows = 0;
  int64_t dim = 0;
  int64_t src_stride = 0;
};

// dst[r] = bf16(src[rows[r]]), rounded to nearest even. Device pointers; async on `stream`.
cudaError_t LaunchGatherBf16(const GatherBf16Params& params, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_MATMUL_CUDA_H_
