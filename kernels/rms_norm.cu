#include "kernels/rms_norm_cuda.h"

namespace arbor::kernels {
namespace {

constexpr int kThreads = 256;

// One block per row. Pass 1 adds the residual (when fused) and sums squares — per thread in
// fp32 over a few elements, across threads in double, as the reference sums in double; pass 2
// scales. The row is re-read from L1/L2, not from memory, for the second pass.
__global__ void RmsNormKernel(RmsNormParams p) {
  const int64_t r = blockIdx.x;
  const float* x = p.x + r * p.x_stride;
  float* residual = p.residual != nullptr ? p.residual + r * p.residual_stride : nullptr;
  const float* src = residual != nullptr ? residual : x;
  float local = 0.0f;
  for (int64_t i = threadIdx.x; i < p.dim; i += kThreads) {
    float v = x[i];
    if (residual != nullptr) {
      v += residual[i];
      residual[i] = v;
    }
    local += v * v;
  }
  __shared__ double partial[kThreads / 32];
  double sum = local;
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  __shared__ float inv_rms;
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < kThreads / 32; ++w) total += partial[w];
    inv_rms = static_cast<float>(1.0 / sqrt(total / static_cast<double>(p.dim) + p.eps));
  }
  __syncthreads();
  float* out = p.out + r * p.out_stride;
  for (int64_t i = threadIdx.x; i < p.dim; i += kThreads) {
    out[i] = src[i] * inv_rms * p.weight[i];
  }
}

}  // namespace

cudaError_t LaunchRmsNorm(const RmsNormParams& p, cudaStream_t stream) {
  if (p.rows == 0) return cudaSuccess;
  RmsNormKernel<<<p.rows, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace arbor::kernels
