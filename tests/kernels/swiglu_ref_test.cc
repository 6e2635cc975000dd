// The SwiGLU reference against float64 arithmetic on fresh random inputs, with strides.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/swiglu.h"

namespace arbor::kernels {
namespace {

TEST(SwigluRef, MatchesFloat64WithStrides) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  const int64_t rows = 7, dim = 33, stride = 40;
  std::vector<float> gate(rows * stride), up(rows * stride), out(rows * stride, NAN);
  for (float& x : gate) x = normal(rng);
  for (float& x : up) x = normal(rng);
  SwigluRef({gate.data(), up.data(), out.data(), rows, dim, stride, stride, stride});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < stride; ++i) {
      const int64_t k = r * stride + i;
      if (i >= dim) {
        EXPECT_TRUE(std::isnan(out[k])) << "wrote outside the row at " << r << "," << i;
        continue;
      }
      const double g = gate[k];
      const double want = g / (1.0 + std::exp(-g)) * up[k];
      EXPECT_NEAR(out[k], want, 1e-5 * (1.0 + std::abs(want))) << r << "," << i;
    }
  }
}

TEST(SwigluRef, ClosedForms) {
  const float gate[3] = {0.0f, 100.0f, -100.0f};
  const float up[3] = {5.0f, 2.0f, 3.0f};
  float out[3];
  SwigluRef({gate, up, out, 1, 3, 3, 3, 3});
  EXPECT_EQ(out[0], 0.0f);             // silu(0) = 0
  EXPECT_NEAR(out[1], 200.0f, 1e-3f);  // silu(x) → x for large x
  EXPECT_NEAR(out[2], 0.0f, 1e-30f);   // silu(x) → 0 for very negative x
}

}  // namespace
}  // namespace arbor::kernels
