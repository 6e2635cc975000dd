// ARBOR_HOST_DEVICE marks a small function that CUDA kernels call too, so the host and the device
// run one definition instead of two twins (base::SoftmaxMoments' merge, for one). Empty for
// the host compiler.
#ifndef ARBOR_BASE_HOST_DEVICE_H_
#define ARBOR_BASE_HOST_DEVICE_H_

#if defined(__CUDACC__)
#define ARBOR_HOST_DEVICE __host__ __device__
#else
#define ARBOR_HOST_DEVICE
#endif

#endif  // ARBOR_BASE_HOST_DEVICE_H_
