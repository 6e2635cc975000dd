// DeepConf's confidences against a float64 reference on fresh random streams: a token's
// confidence over its 20 most likely logprobs, and the sliding window's current and lowest mean
// (recomputed from scratch at every step, so the running sum's drift is bounded too).
#include "entropix/trace_confidence.h"

#include <algorithm>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace arbor::entropix {
namespace {

TEST(TraceConfidence, TokenConfidenceAveragesTheTwentyMostLikely) {
  EXPECT_EQ(TokenConfidence({}), 0.0f);
  EXPECT_FLOAT_EQ(TokenConfidence(std::vector<float>{-0.5f, -1.5f}), 1.0f);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> logprob(-20.0f, 0.0f);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<float> top(1 + rng() % 40);
    for (float& x : top) x = logprob(rng);
    std::sort(top.begin(), top.end(), std::greater<float>());
    const size_t k = std::min<size_t>(20, top.size());
    double sum = 0.0;
    for (size_t j = 0; j < k; ++j) sum -= top[j];
    EXPECT_NEAR(TokenConfidence(top), sum / k, 1e-5) << "trial " << trial;
  }
}

TEST(TraceConfidence, WindowMeansMatchARecomputation) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> confidence(0.0f, 15.0f);
  for (int window : {1, 3, 16}) {
    GroupConfidence group(window);
    std::vector<double> seen;
    double lowest = 0.0;
    bool filled = false;
    for (int t = 0; t < 500; ++t) {
      const float c = confidence(rng);
      group.Add(c);
      seen.push_back(c);
      const size_t n = std::min<size_t>(window, seen.size());
      double sum = 0.0;
      for (size_t i = seen.size() - n; i < seen.size(); ++i) sum += seen[i];
      const double mean = sum / static_cast<double>(n);
      EXPECT_NEAR(group.current(), mean, 1e-9 * 500) << "window " << window << ", t " << t;
      EXPECT_EQ(group.full(), static_cast<int>(seen.size()) >= window);
      if (group.full()) {
        lowest = filled ? std::min(lowest, mean) : mean;
        filled = true;
      }
      EXPECT_NEAR(group.lowest(), filled ? lowest : mean, 1e-6);
    }
  }
}

}  // namespace
}  // namespace arbor::entropix
