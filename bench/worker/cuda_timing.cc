#include "bench/worker/cuda_timing.h"

namespace arbor::bench {

double MeasureCopyBandwidth() {
  const size_t bytes = size_t{1} << 30;
  void *src = nullptr, *dst = nullptr;
  if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess) {
    cudaFree(src);
    return 0;
  }
  cudaMemset(src, 0x5a, bytes);
  const double ms =
      MedianMs(nullptr, [&](int) { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice); });
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * bytes / (ms * 1e-3);
}

}  // namespace arbor::bench
