// The shared SIMD helpers against float64 on fresh random inputs: the softmax numerators
// (ExpShifted, its own exp) within 4 ulp of e^x, zero below the float range, and their sum;
// the eight-at-a-time dot products (DotRows) within fp32 rounding of the exact sums, for every
// count of rows and each row the same at any place.
#include "kernels/cpu_simd.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace arbor::kernels::simd {
namespace {

TEST(CpuSimd, ExpShiftedMatchesFloat64) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-120.0f, 30.0f);
  for (int64_t n : {1, 7, 8, 9, 100, 1027}) {
    std::vector<float> s(n);
    for (float& v : s) v = value(rng);
    s[n / 2] = 40.0f;  // The max itself: e^0 = 1.
    const std::vector<float> in = s;
    const float sum = ExpShifted(s.data(), n, 40.0f);
    double expected_sum = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      const double x = in[j] - 40.0f;  // The shifted value as the float subtraction rounds it.
      const double e = x < std::log(1.1754943508222875e-38) ? 0.0 : std::exp(x);
      expected_sum += e;
      EXPECT_NEAR(s[j], e, 4 * 1.2e-7 * e) << "x " << x;
    }
    EXPECT_EQ(s[n / 2], 1.0f);
    EXPECT_NEAR(sum, expected_sum, 1e-6 * expected_sum);
  }
}

TEST(CpuSimd, DotRowsMatchFloat64AndEachRowIsItsOwn) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> value;
  constexpr int64_t kDim = 64;
  std::vector<float> a(kDim), rows(19 * kDim);
  for (float& v : a) v = value(rng);
  for (float& v : rows) v = value(rng);
  std::vector<const float*> pointers;
  for (int64_t j = 0; j < 19; ++j) pointers.push_back(rows.data() + j * kDim);
  std::vector<float> all(19);
  DotRows(a.data(), pointers.data(), 19, kDim, 0.125f, all.data());
  for (int64_t j = 0; j < 19; ++j) {
    double exact = 0.0, magnitude = 0.0;
    for (int64_t i = 0; i < kDim; ++i) {
      exact += static_cast<double>(a[i]) * rows[j * kDim + i];
      magnitude += std::abs(static_cast<double>(a[i]) * rows[j * kDim + i]);
    }
    EXPECT_NEAR(all[j], 0.125 * exact, 0.125 * magnitude * kDim * 6e-8) << "row " << j;
  }
  for (int64_t n = 1; n < 19; ++n) {  // Fewer rows, starting anywhere: the same bits.
    for (int64_t first = 0; first + n <= 19; first += 5) {
      std::vector<float> some(n);
      DotRows(a.data(), pointers.data() + first, n, kDim, 0.125f, some.data());
      for (int64_t j = 0; j < n; ++j) ASSERT_EQ(some[j], all[first + j]) << n << " " << first;
    }
  }
}

}  // namespace
}  // namespace arbor::kernels::simd
