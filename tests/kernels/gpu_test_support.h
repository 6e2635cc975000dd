// What the GPU kernel tests share: skipping without a device, seeded random inputs, device
// arrays that can be poisoned so an unwritten output fails, bf16 rounding, and the comparison
// with a stated relative tolerance. Header-only, for tests/kernels/*_gpu_test.cc.
#ifndef ARBOR_TESTS_KERNELS_GPU_TEST_SUPPORT_H_
#define ARBOR_TESTS_KERNELS_GPU_TEST_SUPPORT_H_

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "base/bf16.h"
#include "kernels/cuda/cuda_status.h"
#include "tests/support/test_seed.h"

namespace arbor::kernels {

#define SKIP_WITHOUT_DEVICE() \
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine"

inline std::mt19937 Rng() { return std::mt19937(TestSeed()); }

inline std::vector<float> Normal(std::mt19937& rng, size_t n, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// A device copy of a host vector; Poison fills every byte with 0xff (NaN for floats, −1 ints).
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    EXPECT_TRUE(
        CudaStatus(cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max<size_t>(1, n) * sizeof(T)),
                   "malloc")
            .ok());
  }
  // The copy and Poison's memset go on the legacy stream, which the kernels' non-blocking
  // streams do not wait for: each waits for the device, or the kernel could read the array
  // before the copy lands or have its output poisoned after it ran.
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice);
    EXPECT_TRUE(CudaStatus(cudaDeviceSynchronize(), "upload").ok());
  }
  ~DeviceArray() { cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return ptr_; }
  void Poison() {
    cudaMemset(ptr_, 0xff, n_ * sizeof(T));
    EXPECT_TRUE(CudaStatus(cudaDeviceSynchronize(), "poison").ok());
  }
  std::vector<T> Download() const {
    std::vector<T> host(n_);
    EXPECT_TRUE(CudaStatus(cudaDeviceSynchronize(), "sync").ok());
    cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost);
    return host;
  }

 private:
  T* ptr_ = nullptr;
  size_t n_;
};

inline void ExpectOk(cudaError_t e) {
  ASSERT_TRUE(CudaStatus(e, "launch").ok()) << cudaGetErrorString(e);
}

// ‖got − want‖ ≤ tol·‖want‖ + floor·√n, and no NaN anywhere (a poisoned element left
// unwritten). `floor` is for outputs that can cancel to near zero, such as dot products: their
// rounding scales with the terms' magnitudes, not with the result's.
inline void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, double tol,
                        double floor = 0) {
  ASSERT_EQ(got.size(), want.size());
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << "element " << i << " unwritten or NaN";
    err += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
    norm += double{want[i]} * want[i];
  }
  EXPECT_LE(std::sqrt(err), tol * std::sqrt(norm) + floor * std::sqrt(got.size()) + 1e-30)
      << "relative error too large";
}

// bf16 pools hold `floats` rounded; Widen reads them back (both exact for the comparison).
inline std::vector<uint16_t> ToBf16(const std::vector<float>& floats) {
  std::vector<uint16_t> out(floats.size());
  for (size_t i = 0; i < floats.size(); ++i) out[i] = base::FloatToBf16(floats[i]);
  return out;
}
inline std::vector<float> Widen(const std::vector<uint16_t>& halves) {
  std::vector<float> out(halves.size());
  for (size_t i = 0; i < halves.size(); ++i) out[i] = base::Bf16ToFloat(halves[i]);
  return out;
}

// Per-sequence score rows on the device, shaped like `host`, and the table of their pointers
// the attention kernels write through.
struct DeviceScores {
  explicit DeviceScores(const std::vector<std::vector<float>>& host) {
    std::vector<float*> pointers;
    for (const std::vector<float>& row : host) {
      rows.push_back(std::make_unique<DeviceArray<float>>(row.size()));
      pointers.push_back(rows.back()->get());
    }
    table = std::make_unique<DeviceArray<float*>>(pointers);
  }
  std::vector<std::unique_ptr<DeviceArray<float>>> rows;
  std::unique_ptr<DeviceArray<float*>> table;
};

}  // namespace arbor::kernels

#endif  // ARBOR_TESTS_KERNELS_GPU_TEST_SUPPORT_H_
