// Sums and maxima over the lanes of a warp, or of aligned teams of kLanes lanes within one (a
// power of two ≤ 32), by a butterfly of shuffles in one fixed order, so every lane gets the same
// bits. Every lane of the warp must call them. Include only from .cu files.
#ifndef ARBOR_KERNELS_WARP_REDUCE_CUDA_H_
#define ARBOR_KERNELS_WARP_REDUCE_CUDA_H_

namespace arbor::kernels {

template <int kLanes = 32, typename T>
__device__ __forceinline__ T WarpSum(T v) {
  for (int o = kLanes / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <int kLanes = 32>
__device__ __forceinline__ float WarpMax(float v) {
  for (int o = kLanes / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_WARP_REDUCE_CUDA_H_
