// The SwiGLU reference against float64 arithmetic on fresh random inputs, with strides.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/swiglu.h"
#include "tests/support/test_seed.h"

namespace arbor::kernels {
namespace {

TEST(SwigluRef, MatchesFloat64WithStrides) {
  const uint32_t seed = TestSeed();
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

// Through the eight-lane path (the first eight) and the scalar tail (the last three).
TEST(SwigluRef, ClosedForms) {
  const float gate[11] = {0.0f, 100.0f, -100.0f, 1.0f,   -1.0f,  0.0f,
                          0.0f, 0.0f,   0.0f,    100.0f, -100.0f};
  const float up[11] = {5.0f, 2.0f, 3.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0.0f, 5.0f, 2.0f, 3.0f};
  float out[11];
  SwigluRef({gate, up, out, 1, 11, 11, 11, 11});
  for (int at : {0, 8}) {
    EXPECT_EQ(out[at], 0.0f);                 // silu(0) = 0
    EXPECT_NEAR(out[at + 1], 200.0f, 1e-3f);  // silu(x) → x for large x
    EXPECT_NEAR(out[at + 2], 0.0f, 1e-30f);   // silu(x) → 0 for very negative x
  }
  EXPECT_NEAR(out[3], 1.0 / (1.0 + std::exp(-1.0)), 1e-7);  // σ(1)
  EXPECT_NEAR(out[4], -1.0 / (1.0 + std::exp(1.0)), 1e-7);  // −σ(−1)
}

}  // namespace
}  // namespace arbor::kernels
