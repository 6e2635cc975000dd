// The SwiGLU CUDA kernel against its CPU twin; skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda/cuda_status.h"
#include "kernels/swiglu_cuda.h"
#include "tests/support/test_seed.h"

namespace arbor::kernels {
namespace {

TEST(SwigluGpu, MatchesCpuReference) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  for (const auto& [rows, dim] : {std::pair<int64_t, int64_t>{1, 1}, {7, 33}, {64, 8192}}) {
    const size_t n = rows * dim;
    std::vector<float> gate(n), up(n), want(n), got(n);
    for (float& x : gate) x = normal(rng);
    for (float& x : up) x = normal(rng);
    SwigluRef({gate.data(), up.data(), want.data(), rows, dim, dim, dim, dim});

    float *d_gate, *d_up, *d_out;
    ASSERT_TRUE(CudaStatus(cudaMalloc(reinterpret_cast<void**>(&d_gate), n * 4), "malloc").ok());
    ASSERT_TRUE(CudaStatus(cudaMalloc(reinterpret_cast<void**>(&d_up), n * 4), "malloc").ok());
    ASSERT_TRUE(CudaStatus(cudaMalloc(reinterpret_cast<void**>(&d_out), n * 4), "malloc").ok());
    cudaMemcpy(d_gate, gate.data(), n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(d_up, up.data(), n * 4, cudaMemcpyHostToDevice);
    cudaMemset(d_out, 0xff, n * 4);  // Poison: NaN everywhere before the run.
    ASSERT_TRUE(
        CudaStatus(LaunchSwiglu({d_gate, d_up, d_out, rows, dim, dim, dim, dim}, nullptr), "launch")
            .ok());
    ASSERT_TRUE(
        CudaStatus(cudaMemcpy(got.data(), d_out, n * 4, cudaMemcpyDeviceToHost), "copy").ok());
    cudaFree(d_gate);
    cudaFree(d_up);
    cudaFree(d_out);
    for (size_t i = 0; i < n; ++i) {
      // __expf has ~2 ulp error; relative 1e-5 covers it.
      ASSERT_NEAR(got[i], want[i], 1e-5f * (1.0f + std::abs(want[i]))) << "index " << i;
    }
  }
}

}  // namespace
}  // namespace arbor::kernels
