// Device side of base::SoftmaxMoments (base/softmax_moments.h): one block reduces a
// chunk of inputs into a state with the same fields, which the host merges in any order with
// SoftmaxMoments::Merge. Shared by the fused logits pass and the attention statistics.
// Include only from .cu files; every thread of the block must call these.
#ifndef ARBOR_KERNELS_SOFTMAX_MOMENTS_CUDA_H_
#define ARBOR_KERNELS_SOFTMAX_MOMENTS_CUDA_H_

#include <cstdint>

#include "base/softmax_moments.h"

namespace arbor::kernels {

// Block-wide reduction of `value` (sum or max); every thread gets the result. blockDim.x must be
// a multiple of 32, ≤ 1024. `scratch` is shared memory of 32 elements, reused across calls.
template <typename T, typename Op>
__device__ T BlockReduce(T value, T* scratch, Op op) {
  for (int o = 16; o > 0; o /= 2) value = op(value, __shfl_xor_sync(0xffffffffu, value, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  T total = scratch[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) total = op(total, scratch[w]);
  return total;
}

struct DeviceAdd {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct DeviceMax {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
  __device__ int operator()(int a, int b) const { return max(a, b); }
};
struct DeviceMin {
  __device__ int operator()(int a, int b) const { return min(a, b); }
};

// Moments of x[0..n) (finite or −inf; −inf contributes nothing), as SoftmaxMoments::AddChunk
// computes them: the chunk maximum first, then fp32 terms summed in double. Thread 0 writes
// `out` (left empty when nothing is finite); every thread gets Σ|x| back for callers that need it.
__device__ inline double BlockChunkMoments(const float* x, int64_t n, base::SoftmaxMoments* out,
                                           double* scratch) {
  float local_max = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) local_max = fmaxf(local_max, x[i]);
  const float chunk_max = BlockReduce(local_max, reinterpret_cast<float*>(scratch), DeviceMax());
  double s0 = 0.0, s1 = 0.0, s2 = 0.0, abs_sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float y = x[i] - chunk_max;
    const float e = expf(y);
    if (e != 0.0f) {
      s0 += e;
      s1 += e * y;
      s2 += e * y * y;
    }
    if (x[i] != -INFINITY) abs_sum += fabsf(x[i]);
  }
  s0 = BlockReduce(s0, scratch, DeviceAdd());
  s1 = BlockReduce(s1, scratch, DeviceAdd());
  s2 = BlockReduce(s2, scratch, DeviceAdd());
  abs_sum = BlockReduce(abs_sum, scratch, DeviceAdd());
  if (threadIdx.x == 0) {
    out->max = chunk_max == -INFINITY ? -INFINITY : static_cast<double>(chunk_max);
    out->sum = chunk_max == -INFINITY ? 0.0 : s0;
    out->sum_x = chunk_max == -INFINITY ? 0.0 : s1;
    out->sum_xx = chunk_max == -INFINITY ? 0.0 : s2;
  }
  return abs_sum;
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_SOFTMAX_MOMENTS_CUDA_H_
