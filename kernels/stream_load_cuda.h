// A 16-byte load of data a kernel reads once per launch (weight rows streamed by the GEMV and the
// batch-invariant GEMM): it bypasses L1, so the activation rows that every warp re-reads stay
// there. Not volatile: the loads may be scheduled freely (the weights never change during a
// launch). Include only from .cu files.
#ifndef ARBOR_KERNELS_STREAM_LOAD_CUDA_H_
#define ARBOR_KERNELS_STREAM_LOAD_CUDA_H_

namespace arbor::kernels {

__device__ __forceinline__ uint4 LoadOnce(const uint4* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_STREAM_LOAD_CUDA_H_
