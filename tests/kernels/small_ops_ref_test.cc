// Embedding, RMSNorm (plain and fused with the residual add), the bias add and RoPE
// against float64 arithmetic on fresh random inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "base/bf16.h"
#include "kernels/bias_add.h"
#include "kernels/embedding.h"
#include "kernels/rms_norm.h"
#include "kernels/rope.h"
#include "tests/support/rope_reference.h"
#include "tests/support/test_seed.h"

namespace arbor::kernels {
namespace {

TEST(EmbeddingRef, GathersF32AndBf16Rows) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  const int64_t vocab = 37, dim = 19, stride = 23, n = 11;
  std::vector<float> table(vocab * dim);
  std::vector<uint16_t> table16(vocab * dim);
  for (int64_t i = 0; i < vocab * dim; ++i) {
    table[i] = normal(rng);
    table16[i] = base::FloatToBf16(table[i]);
  }
  std::vector<int32_t> tokens(n);
  for (int32_t& t : tokens) t = std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
  tokens[0] = 0;
  tokens[1] = vocab - 1;
  std::vector<float> out(n * stride, NAN), out16(n * stride, NAN);
  EmbeddingRef({tokens.data(), table.data(), WeightType::kF32, out.data(), n, vocab, dim, stride});
  EmbeddingRef(
      {tokens.data(), table16.data(), WeightType::kBF16, out16.data(), n, vocab, dim, stride});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < stride; ++j) {
      if (j >= dim) {
        EXPECT_TRUE(std::isnan(out[i * stride + j]));
        continue;
      }
      EXPECT_EQ(out[i * stride + j], table[tokens[i] * dim + j]);
      EXPECT_EQ(out16[i * stride + j], base::Bf16ToFloat(table16[tokens[i] * dim + j]));
    }
  }
}

TEST(RmsNormRef, PlainAndFusedMatchFloat64) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int64_t dim : {1, 7, 64, 1000}) {
    const int64_t rows = 5, stride = dim + 3;
    const float eps = 1e-5f;
    std::vector<float> x(rows * stride), residual(rows * stride), weight(dim);
    for (float& v : x) v = normal(rng);
    for (float& v : residual) v = normal(rng);
    for (float& v : weight) v = normal(rng);
    const std::vector<float> residual_in = residual;
    std::vector<float> plain(rows * stride), fused(rows * stride);
    RmsNormRef({x.data(), nullptr, weight.data(), plain.data(), rows, dim, stride, 0, stride, eps});
    RmsNormRef({x.data(), residual.data(), weight.data(), fused.data(), rows, dim, stride, stride,
                stride, eps});
    for (int64_t r = 0; r < rows; ++r) {
      for (bool with_residual : {false, true}) {
        std::vector<double> src(dim);
        double ss = 0;
        for (int64_t i = 0; i < dim; ++i) {
          src[i] = double{x[r * stride + i]} +
                   (with_residual ? double{residual_in[r * stride + i]} : 0.0);
          ss += src[i] * src[i];
        }
        const double inv = 1.0 / std::sqrt(ss / dim + eps);
        for (int64_t i = 0; i < dim; ++i) {
          const double want = src[i] * inv * weight[i];
          const float got = with_residual ? fused[r * stride + i] : plain[r * stride + i];
          EXPECT_NEAR(got, want, 1e-5 * (1 + std::abs(want))) << dim << " " << r << " " << i;
          if (with_residual) {
            EXPECT_NEAR(residual[r * stride + i], src[i], 1e-6 * (1 + std::abs(src[i])));
          }
        }
      }
    }
  }
}

// Llama-3 scaling written independently from the published formula, in float64.
double Llama3InvFreq64(double theta, int head_dim, int i, const RopeScalingParams& s) {
  return reference::Llama3ScaledInvFreq64(1.0 / std::pow(theta, 2.0 * i / head_dim), s.factor,
                                          s.low_freq_factor, s.high_freq_factor,
                                          s.original_max_position_embeddings);
}

TEST(BiasAddRef, AddsTheBiasToEveryRowAndNothingElse) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  const int64_t rows = 5, dim = 13, stride = 17;
  std::vector<float> x(rows * stride), bias(dim);
  for (float& v : x) v = normal(rng);
  for (float& v : bias) v = normal(rng);
  std::vector<float> out = x;
  BiasAddRef({out.data(), bias.data(), rows, dim, stride});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < stride; ++i) {
      const double want = double{x[r * stride + i]} + (i < dim ? double{bias[i]} : 0.0);
      // One fp32 rounding of the exact sum.
      EXPECT_EQ(out[r * stride + i], static_cast<float>(want)) << r << ", " << i;
    }
  }
}

TEST(RopeRef, InvFreqScalings) {
  RopeScalingParams llama3{RopeScalingParams::Type::kLlama3, 32.0, 1.0, 4.0, 8192.0, {}};
  const std::vector<float> f = RopeInvFreq(500000.0, 64, llama3);
  ASSERT_EQ(f.size(), 32u);
  int low = 0, mid = 0, high = 0;
  for (int i = 0; i < 32; ++i) {
    const double want = Llama3InvFreq64(500000.0, 64, i, llama3);
    EXPECT_NEAR(f[i], want, 1e-6 * want) << i;
    const double wavelen = 2 * std::numbers::pi * std::pow(500000.0, 2.0 * i / 64);
    low += wavelen > 8192.0;
    high += wavelen < 2048.0;
    mid += wavelen >= 2048.0 && wavelen <= 8192.0;
  }
  EXPECT_GT(low, 0);  // The test covers all three bands.
  EXPECT_GT(mid, 0);
  EXPECT_GT(high, 0);
  const std::vector<float> none = RopeInvFreq(10000.0, 6, {});
  const std::vector<float> linear =
      RopeInvFreq(10000.0, 6, {RopeScalingParams::Type::kLinear, 4.0});
  for (int i = 0; i < 3; ++i) {
    EXPECT_FLOAT_EQ(none[i], std::pow(10000.0, -2.0 * i / 6));
    EXPECT_FLOAT_EQ(linear[i], none[i] / 4.0f);
  }
}

TEST(RopeRef, RotatesLikeFloat64) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  const int64_t tokens = 9, heads = 3, head_dim = 16, stride = heads * head_dim + 5;
  const std::vector<float> inv_freq =
      RopeInvFreq(500000.0, head_dim, {RopeScalingParams::Type::kLlama3, 8.0, 1.0, 4.0, 64.0, {}});
  std::vector<int32_t> positions(tokens);
  for (int32_t& p : positions) p = std::uniform_int_distribution<int32_t>(0, 100000)(rng);
  positions[0] = 0;
  std::vector<float> x(tokens * stride);
  for (float& v : x) v = normal(rng);
  const std::vector<float> x0 = x;
  std::vector<float> cos(tokens * head_dim / 2), sin(tokens * head_dim / 2);
  RopeCosSinRef({positions.data(), inv_freq.data(), cos.data(), sin.data(), tokens, head_dim});
  RopeRef({x.data(), cos.data(), sin.data(), tokens, heads, head_dim, stride});
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(positions[t]) * inv_freq[i];
        const double a = x0[t * stride + h * head_dim + i];
        const double b = x0[t * stride + h * head_dim + i + half];
        EXPECT_NEAR(x[t * stride + h * head_dim + i], a * std::cos(angle) - b * std::sin(angle),
                    1e-5);
        EXPECT_NEAR(x[t * stride + h * head_dim + i + half],
                    b * std::cos(angle) + a * std::sin(angle), 1e-5);
      }
    }
    for (int64_t i = heads * head_dim; i < stride; ++i) {
      EXPECT_EQ(x[t * stride + i], x0[t * stride + i]) << "padding touched";
    }
  }
}

}  // namespace
}  // namespace arbor::kernels
