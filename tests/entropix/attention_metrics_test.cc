// Attention metrics against a float64 reference that materialises REFERENCE mode's zero-padded
// buffer (the library adds the empty slots analytically), plus closed forms and the online
// building blocks a GPU kernel uses.
#include "entropix/attention_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "tests/support/test_seed.h"

namespace arbor::entropix {
namespace {

// docs/ARCHITECTURE.md §4.1 evaluated directly on [heads][slots] scores (already padded when
// REFERENCE).
AttentionMetrics Reference(const std::vector<std::vector<double>>& s) {
  const size_t heads = s.size(), slots = s[0].size();
  std::vector<std::vector<double>> a(heads, std::vector<double>(slots));
  std::vector<double> e(heads, 0.0), hv(heads, 0.0);
  double abs_sum = 0.0;
  for (size_t h = 0; h < heads; ++h) {
    const double max = *std::max_element(s[h].begin(), s[h].end());
    double z = 0.0;
    for (double v : s[h]) z += std::exp(v - max);
    for (size_t k = 0; k < slots; ++k) {
      a[h][k] = std::exp(s[h][k] - max) / z;
      e[h] -= a[h][k] * std::log2(a[h][k]);
      abs_sum += std::abs(s[h][k]);
    }
    for (size_t k = 0; k < slots; ++k) hv[h] += a[h][k] * std::pow(std::log2(a[h][k]) + e[h], 2);
  }
  double mean_e = 0.0, mean_hv = 0.0;
  for (size_t h = 0; h < heads; ++h) mean_e += e[h] / heads, mean_hv += hv[h] / heads;
  double var = 0.0;
  for (double v : e) var += (v - mean_e) * (v - mean_e) / heads;
  double agreement = 0.0;
  for (size_t k = 0; k < slots; ++k) {
    double mean = 0.0;
    for (size_t h = 0; h < heads; ++h) mean += a[h][k] / heads;
    for (size_t h = 0; h < heads; ++h) agreement += std::abs(a[h][k] - mean);
  }
  const double cells = static_cast<double>(heads * slots);
  return {static_cast<float>(mean_e), static_cast<float>(var), static_cast<float>(mean_hv),
          static_cast<float>(agreement / cells), static_cast<float>(abs_sum / cells)};
}

void ExpectNear(const AttentionMetrics& got, const AttentionMetrics& want, double tol) {
  EXPECT_NEAR(got.attn_entropy, want.attn_entropy, tol * (1 + want.attn_entropy));
  EXPECT_NEAR(got.attn_varentropy, want.attn_varentropy, tol * (1 + want.attn_varentropy));
  EXPECT_NEAR(got.attn_head_varentropy, want.attn_head_varentropy,
              tol * (1 + want.attn_head_varentropy));
  EXPECT_NEAR(got.agreement, want.agreement, tol * (1e-3 + want.agreement));
  EXPECT_NEAR(got.interaction_strength, want.interaction_strength,
              tol * (1 + want.interaction_strength));
}

struct Scores {
  int heads, keys, stride;
  std::vector<float> data;
  // The reference input: visible keys, then zeros up to `slots`.
  std::vector<std::vector<double>> Padded(int slots) const {
    std::vector<std::vector<double>> s(heads, std::vector<double>(slots, 0.0));
    for (int h = 0; h < heads; ++h) {
      for (int k = 0; k < keys; ++k) s[h][k] = data[h * stride + k];
    }
    return s;
  }
};

Scores RandomScores(std::mt19937& rng, int heads, int keys, float scale) {
  Scores s{heads, keys, keys + static_cast<int>(rng() % 5), {}};
  s.data.assign(static_cast<size_t>(heads) * s.stride, NAN);  // Padding must never be read.
  std::normal_distribution<float> normal(0.0f, scale);
  for (int h = 0; h < heads; ++h) {
    // Heads differ in sharpness so the variance over heads is not trivial.
    const float sharp = 0.2f + 2.0f * h / heads;
    for (int k = 0; k < keys; ++k) s.data[h * s.stride + k] = sharp * normal(rng);
  }
  return s;
}

TEST(AttentionMetrics, RandomScoresMatchFloat64InBothModes) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 8; ++trial) {
    const int heads = 1 + rng() % 32, keys = 1 + rng() % 700;
    const Scores s = RandomScores(rng, heads, keys, trial % 2 ? 4.0f : 1.0f);
    SCOPED_TRACE(testing::Message() << "heads " << heads << " keys " << keys);
    auto exact =
        ComputeAttentionMetrics(s.data.data(), heads, keys, s.stride, AttentionMode::kExact, 4096);
    ASSERT_TRUE(exact.ok()) << exact.status();
    ExpectNear(*exact, Reference(s.Padded(keys)), 1e-5);
    const int reference_len = keys + 1 + rng() % 1000;
    auto padded = ComputeAttentionMetrics(s.data.data(), heads, keys, s.stride,
                                          AttentionMode::kReference, reference_len);
    ASSERT_TRUE(padded.ok()) << padded.status();
    ExpectNear(*padded, Reference(s.Padded(reference_len)), 1e-5);
  }
}

TEST(AttentionMetrics, UniformScoresClosedForm) {
  const int heads = 8, keys = 100;
  std::vector<float> s(heads * keys, -1.5f);
  auto m = ComputeAttentionMetrics(s.data(), heads, keys, keys, AttentionMode::kExact, 4096);
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->attn_entropy, std::log2(100.0), 1e-5);
  EXPECT_NEAR(m->attn_varentropy, 0.0f, 1e-12);
  EXPECT_NEAR(m->attn_head_varentropy, 0.0f, 1e-12);
  EXPECT_NEAR(m->agreement, 0.0f, 1e-9);
  EXPECT_NEAR(m->interaction_strength, 1.5f, 1e-6);
  // REFERENCE: the 100 keys at −1.5 and 4 empty slots at 0 → a two-level distribution.
  auto r = ComputeAttentionMetrics(s.data(), heads, keys, keys, AttentionMode::kReference, 104);
  ASSERT_TRUE(r.ok());
  const double z = 100 * std::exp(-1.5) + 4, a = std::exp(-1.5) / z, b = 1 / z;
  EXPECT_NEAR(r->attn_entropy, -(100 * a * std::log2(a) + 4 * b * std::log2(b)), 1e-5);
  EXPECT_NEAR(r->interaction_strength, 1.5 * 100 / 104, 1e-6);
}

TEST(AttentionMetrics, ReferenceEqualsExactOnExplicitlyPaddedScores) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const int heads = 32, keys = 300, reference_len = 4096;
  const Scores s = RandomScores(rng, heads, keys, 3.0f);
  std::vector<float> padded(heads * reference_len, 0.0f);
  for (int h = 0; h < heads; ++h) {
    std::copy_n(&s.data[h * s.stride], keys, &padded[h * reference_len]);
  }
  auto analytic = ComputeAttentionMetrics(s.data.data(), heads, keys, s.stride,
                                          AttentionMode::kReference, reference_len);
  auto explicit_pad = ComputeAttentionMetrics(padded.data(), heads, reference_len, reference_len,
                                              AttentionMode::kExact, reference_len);
  ASSERT_TRUE(analytic.ok() && explicit_pad.ok());
  ExpectNear(*analytic, *explicit_pad, 1e-5);
}

TEST(AttentionMetrics, LongerThanTheBufferIsExact) {
  std::mt19937 rng(7);
  const Scores s = RandomScores(rng, 4, 50, 2.0f);
  auto exact = ComputeAttentionMetrics(s.data.data(), 4, 50, s.stride, AttentionMode::kExact, 1);
  auto ref = ComputeAttentionMetrics(s.data.data(), 4, 50, s.stride, AttentionMode::kReference, 10);
  ASSERT_TRUE(exact.ok() && ref.ok());
  ExpectNear(*ref, *exact, 1e-7);
}

TEST(AttentionMetrics, OnlineStatesMergedInChunksGiveTheSameResult) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const int heads = 16, keys = 1000, reference_len = 2048;
  const Scores s = RandomScores(rng, heads, keys, 2.0f);
  for (AttentionMode mode : {AttentionMode::kExact, AttentionMode::kReference}) {
    // As a split-K kernel would: per head, chunks of keys reduced separately, merged in reverse.
    std::vector<AttentionHeadState> states(heads);
    for (int h = 0; h < heads; ++h) {
      std::vector<AttentionHeadState> chunks;
      for (int start = 0; start < keys; start += 128) {
        chunks.emplace_back().AddScores(&s.data[h * s.stride + start], std::min(128, keys - start));
      }
      for (auto it = chunks.rbegin(); it != chunks.rend(); ++it) states[h].Merge(*it);
    }
    // The agreement pass with the final normalisers.
    double deviation = 0.0;
    for (int k = 0; k < keys; ++k) {
      std::vector<double> a(heads);
      double mean = 0.0;
      for (int h = 0; h < heads; ++h) {
        a[h] =
            std::exp(s.data[h * s.stride + k] - HeadLogNormalizer(states[h], mode, reference_len));
        mean += a[h] / heads;
      }
      for (double v : a) deviation += std::abs(v - mean);
    }
    auto combined = CombineAttentionMetrics(states, deviation, mode, reference_len);
    auto direct =
        ComputeAttentionMetrics(s.data.data(), heads, keys, s.stride, mode, reference_len);
    ASSERT_TRUE(combined.ok() && direct.ok());
    ExpectNear(*combined, *direct, 1e-5);
  }
}

TEST(AttentionMetrics, BadInputIsAnError) {
  std::vector<float> s = {0.0f, 1.0f, 2.0f, INFINITY};
  auto inf = ComputeAttentionMetrics(s.data(), 2, 2, 2, AttentionMode::kExact, 4096);
  EXPECT_NE(inf.status().message().find("scores[1][1]"), absl::string_view::npos) << inf.status();
  s[3] = NAN;
  EXPECT_FALSE(ComputeAttentionMetrics(s.data(), 2, 2, 2, AttentionMode::kExact, 4096).ok());
  EXPECT_FALSE(ComputeAttentionMetrics(s.data(), 0, 2, 2, AttentionMode::kExact, 4096).ok());
  EXPECT_FALSE(ComputeAttentionMetrics(s.data(), 1, 3, 2, AttentionMode::kExact, 4096).ok());
  s[3] = 0.0f;
  EXPECT_FALSE(ComputeAttentionMetrics(s.data(), 2, 2, 2, AttentionMode::kReference, 0).ok());
  std::vector<AttentionHeadState> states(2);
  states[0].AddScores(s.data(), 2);
  states[1].AddScores(s.data(), 1);
  EXPECT_FALSE(CombineAttentionMetrics(states, 0.0, AttentionMode::kExact, 4096).ok());
  EXPECT_FALSE(CombineAttentionMetrics({}, 0.0, AttentionMode::kExact, 4096).ok());
}

}  // namespace
}  // namespace arbor::entropix
