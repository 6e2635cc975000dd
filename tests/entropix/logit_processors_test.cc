// Logit processors against a float64 reference written from their definition (the formulas in
// entropix/logit_processors.h), on fresh random logits, sequences and settings; their finite
// results at the extremes of every range; their validation.
#include "entropix/logit_processors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "tests/support/test_seed.h"

namespace arbor::entropix {
namespace {

using ::testing::HasSubstr;

// The definition in float64: repetition over the whole sequence, frequency and presence over
// positions >= output_start, then the bias.
std::vector<double> Reference(const std::vector<float>& logits, const std::vector<int32_t>& seq,
                              const LogitProcessorConfig& c) {
  std::map<int32_t, int> output;
  std::map<int32_t, bool> context;
  for (size_t p = 0; p < seq.size(); ++p) {
    context[seq[p]] = true;
    if (static_cast<int32_t>(p) >= c.output_start) ++output[seq[p]];
  }
  std::vector<double> out(logits.begin(), logits.end());
  for (size_t t = 0; t < out.size(); ++t) {
    double& x = out[t];
    if (context.count(static_cast<int32_t>(t)) > 0) {
      x = x > 0 ? x / c.repetition_penalty : x * c.repetition_penalty;
    }
    if (const auto it = output.find(static_cast<int32_t>(t)); it != output.end()) {
      x -= double{c.frequency_penalty} * it->second + c.presence_penalty;
    }
    for (const auto& [token, bias] : c.logit_bias) {
      if (token == static_cast<int32_t>(t)) x += bias;
    }
  }
  return out;
}

TEST(LogitProcessors, MatchTheFloat64Definition) {
  std::mt19937 rng(TestSeed());
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    const int32_t vocab = 1 + static_cast<int32_t>(rng() % 300);
    std::vector<float> logits(vocab);
    for (float& x : logits) x = normal(rng);
    if (vocab > 2) logits[1] = 0.0f;  // The sign boundary of the repetition penalty.
    LogitProcessorConfig c;
    // Each processor on in about half the trials, so they are also seen alone.
    if (rng() % 2) c.repetition_penalty = 0.05f + 1.95f * unit(rng);
    if (rng() % 2) c.frequency_penalty = -2.0f + 4.0f * unit(rng);
    if (rng() % 2) c.presence_penalty = -2.0f + 4.0f * unit(rng);
    if (rng() % 2) {
      std::map<int32_t, float> bias;
      for (int i = rng() % 8; i > 0; --i) bias[rng() % vocab] = -100.0f + 200.0f * unit(rng);
      c.logit_bias.assign(bias.begin(), bias.end());
    }
    std::vector<int32_t> seq(rng() % 60);
    for (int32_t& t : seq) t = rng() % std::min(vocab, 20);  // Repeats are the point.
    c.output_start = seq.empty() ? 0 : static_cast<int32_t>(rng() % (seq.size() + 1));
    ASSERT_TRUE(c.Validate(vocab, "").ok());

    LogitProcessorState state(c);
    for (size_t p = 0; p < seq.size(); ++p) state.Add(seq[p], static_cast<int32_t>(p));
    const absl::Span<const LogitAdjustment> adjustments = state.Adjustments();
    if (!c.active()) {
      EXPECT_TRUE(adjustments.empty());
    }
    EXPECT_TRUE(std::is_sorted(adjustments.begin(), adjustments.end(),
                               [](const auto& a, const auto& b) { return a.token < b.token; }));
    std::vector<float> got = logits;
    ApplyLogitAdjustments(adjustments, absl::MakeSpan(got));
    const std::vector<double> want = Reference(logits, seq, c);
    for (int32_t t = 0; t < vocab; ++t) {
      // fp32 arithmetic on values up to ~200: a few ulps.
      EXPECT_NEAR(got[t], want[t], 1e-5 * (1 + std::abs(want[t])))
          << "trial " << trial << " t " << t;
    }
  }
}

TEST(LogitProcessors, AdjustmentsFollowTheSequence) {
  LogitProcessorConfig c;
  c.frequency_penalty = 1.0f;
  c.output_start = 2;
  LogitProcessorState state(c);
  state.Add(5, 0);  // Prompt: not counted.
  state.Add(5, 1);
  EXPECT_TRUE(state.Adjustments().empty());
  state.Add(5, 2);
  state.Add(9, 3);
  state.Add(5, 4);
  const absl::Span<const LogitAdjustment> a = state.Adjustments();
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].token, 5);
  EXPECT_FLOAT_EQ(a[0].add, -2.0f);
  EXPECT_EQ(a[1].token, 9);
  EXPECT_FLOAT_EQ(a[1].add, -1.0f);
  LogitProcessorState off{LogitProcessorConfig()};
  off.Add(3, 0);
  EXPECT_TRUE(off.Adjustments().empty());
}

// Every extreme of every range, on logits from −FLT_MAX to FLT_MAX (and −inf): each result is
// finite (−inf stays −inf), a repetition penalty below 1 never lowers a positive logit, and the
// boosted tokens keep their order.
TEST(LogitProcessors, ExtremeSettingsKeepLogitsFinite) {
  constexpr float kMax = std::numeric_limits<float>::max();
  const std::vector<float> logits = {-kMax, -1e30f, -5.0f, -1e-30f, 0.0f, 1e-30f,   1e-4f,
                                     3.0f,  3.5f,   6.0f,  1e30f,   kMax, -INFINITY};
  const int32_t vocab = static_cast<int32_t>(logits.size());
  const float tiny = std::numeric_limits<float>::denorm_min();
  for (float r : {tiny, 1e-38f, 1e-7f, 2.0f}) {
    for (float f : {-2.0f, 2.0f}) {
      for (float bias : {-100.0f, 100.0f}) {
        LogitProcessorConfig c;
        c.repetition_penalty = r;
        c.frequency_penalty = f;
        c.presence_penalty = f;
        for (int32_t t = 0; t < vocab; ++t) c.logit_bias.push_back({t, bias});
        ASSERT_TRUE(c.Validate(vocab, "").ok());
        LogitProcessorState state(c);
        for (int repeat = 0; repeat < 1000; ++repeat) {  // Counts well above 1.
          for (int32_t t = 0; t < vocab; ++t) state.Add(t, repeat * vocab + t);
        }
        std::vector<float> got = logits;
        ApplyLogitAdjustments(state.Adjustments(), absl::MakeSpan(got));
        for (int32_t t = 0; t + 1 < vocab; ++t) {
          EXPECT_TRUE(std::isfinite(got[t])) << "r " << r << " logit " << logits[t];
        }
        EXPECT_EQ(got.back(), -INFINITY);
        if (r < 1.0f) {
          const float add = -f * 1000 - f + bias;
          for (int32_t t = 5; t + 1 < vocab; ++t)
            EXPECT_GE(got[t], std::min(logits[t] + add, kMax));
          for (int32_t t = 5; t + 3 < vocab; ++t) EXPECT_LT(got[t], got[t + 1]) << logits[t];
        }
      }
    }
  }
}

TEST(LogitProcessors, TinyRepetitionPenaltyBoostsAMillionFold) {
  LogitProcessorConfig c;
  c.repetition_penalty = 1e-38f;
  LogitProcessorState state(c);
  state.Add(0, 0);
  state.Add(1, 1);
  std::vector<float> logits = {4.0f, -4.0f, 4.0f};
  ApplyLogitAdjustments(state.Adjustments(), absl::MakeSpan(logits));
  EXPECT_FLOAT_EQ(logits[0], 4e6f);  // 4 / max(1e-38, 1e-6).
  EXPECT_FLOAT_EQ(logits[1], -4e-38f);
  EXPECT_FLOAT_EQ(logits[2], 4.0f);  // Not in the context.
}

TEST(LogitProcessors, ValidationNamesTheField) {
  auto refusal = [](const LogitProcessorConfig& c) {
    return std::string(c.Validate(100, "processors.").message());
  };
  LogitProcessorConfig c;
  EXPECT_TRUE(c.Validate(100, "").ok());
  c.repetition_penalty = 0.0f;
  EXPECT_THAT(refusal(c), HasSubstr("processors.repetition_penalty"));
  c = {};
  c.frequency_penalty = NAN;
  EXPECT_THAT(refusal(c), HasSubstr("processors.frequency_penalty"));
  c = {};
  c.presence_penalty = -2.5f;
  EXPECT_THAT(refusal(c), HasSubstr("processors.presence_penalty"));
  c = {};
  c.logit_bias = {{100, 1.0f}};
  EXPECT_THAT(refusal(c), HasSubstr("processors.logit_bias[100]: token id"));
  c.logit_bias = {{3, 100.5f}};
  EXPECT_THAT(refusal(c), HasSubstr("processors.logit_bias[3]"));
  c.logit_bias.assign(kMaxLogitBias + 1, {1, 1.0f});
  EXPECT_THAT(refusal(c), HasSubstr("at most 300"));
}

}  // namespace
}  // namespace arbor::entropix
