// The temperature-law fit: the grid starts at the published law, each law's temperatures over a
// synthetic metric stream match entropix's formula worked by hand, and the choice keeps the
// published law unless another is strictly more accurate (likelihood breaking ties).
#include "tools/eval/temperature_fit.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbor::eval {
namespace {

TEST(TemperatureFit, GridStartsWithThePublishedLawAndHasNoRepeats) {
  const std::vector<TemperatureLaw> grid = TemperatureLawGrid();
  ASSERT_EQ(grid.size(), 9u);
  EXPECT_FLOAT_EQ(grid[0].t0, 0.666f);
  EXPECT_FLOAT_EQ(grid[0].scale, 1.0f);
  std::set<std::string> names;
  for (const TemperatureLaw& law : grid) names.insert(law.Name());
  EXPECT_EQ(names.size(), grid.size());
  arbor::v1::PolicyConfig policy;
  ApplyLaw({0.4f, 0.0f}, policy);
  EXPECT_FLOAT_EQ(policy.sampling().temperature(), 0.4f);
  EXPECT_FLOAT_EQ(policy.coefficients().ada_temp_logits(), 0.0f);
  ApplyLaw(TemperatureLaw{}, policy);
  EXPECT_FLOAT_EQ(policy.coefficients().ada_temp_logits(), 0.3f) << "the published coefficients";
}

TEST(TemperatureFit, TemperaturesFollowTheAdaptiveFormula) {
  // Half the steps at H + V = 5, half at H + V = 1; attention terms and agreement 0.
  MetricSamples samples;
  for (int i = 0; i < 1000; ++i) {
    arbor::v1::Metrics m;
    m.set_entropy(i % 2 == 0 ? 2.0f : 0.5f);
    m.set_varentropy(i % 2 == 0 ? 3.0f : 0.5f);
    samples.Add(m);
  }
  // Published: T = 0.666·(1 + 0.3·(H + V)): 1.665 and 0.8658.
  EXPECT_NEAR(TemperatureQuantile(samples, TemperatureLaw{}, 0.9), 0.666 * 2.5, 1e-4);
  EXPECT_NEAR(TemperatureQuantile(samples, TemperatureLaw{}, 0.1), 0.666 * 1.3, 1e-4);
  // Without the uncertainty terms the temperature is T0 on every step.
  EXPECT_NEAR(TemperatureQuantile(samples, {0.2f, 0.0f}, 0.9), 0.2, 1e-6);
  EXPECT_NEAR(TemperatureQuantile(samples, {0.4f, 1.0f / 3}, 0.9), 0.4 * 1.5, 1e-4);
}

LawScore Score(int correct, double logprob) {
  LawScore s;
  s.answers = 100;
  s.correct = correct;
  s.mean_logprob = logprob;
  return s;
}

TEST(TemperatureFit, ChoosesTheMostAccurateKeepingThePublishedOnTies) {
  EXPECT_EQ(ChooseLaw(std::vector<LawScore>{Score(40, -2), Score(40, -1), Score(39, 0)}), 0u)
      << "a tie with the published law keeps it";
  EXPECT_EQ(ChooseLaw(std::vector<LawScore>{Score(40, -2), Score(45, -1), Score(45, -0.5)}), 2u)
      << "among better laws, likelihood breaks the tie";
  EXPECT_EQ(ChooseLaw(std::vector<LawScore>{Score(40, -2), Score(52, -3), Score(45, -0.5)}), 1u);
  MetricSamples samples;
  arbor::v1::Metrics m;
  samples.Add(m);
  const std::string table =
      LawTable(samples, std::vector<LawScore>{Score(40, -2), Score(52, -3)}, 1);
  EXPECT_THAT(table, ::testing::HasSubstr("(published)"));
  EXPECT_THAT(table, ::testing::HasSubstr("<- chosen"));
}

}  // namespace
}  // namespace arbor::eval
