// Timing the CUDA benchmarks share: the device-copy bandwidth each reports its roofline against,
// measured in the same run, and the median of event-timed runs.
#ifndef ARBOR_BENCH_WORKER_CUDA_TIMING_H_
#define ARBOR_BENCH_WORKER_CUDA_TIMING_H_

#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

namespace arbor::bench {

// Device-to-device copy of 1 GiB, median of 20; bytes per second counted read plus write (0 when
// the buffers cannot be allocated).
double MeasureCopyBandwidth();

// Median milliseconds of `fn(rep)` (launches on `stream`) over 20 timed runs after 3 warm-ups.
template <typename Fn>
double MedianMs(cudaStream_t stream, Fn fn) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int rep = 0; rep < 23; ++rep) {
    cudaEventRecord(start, stream);
    fn(rep);
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (rep >= 3) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace arbor::bench

#endif  // ARBOR_BENCH_WORKER_CUDA_TIMING_H_
