// The sampling-law fit: its stages start from what the policy has, the temperatures and min_p
// it reports over a synthetic metric stream follow entropix's formulas worked by hand, the
// choice keeps the incumbent unless another candidate is more accurate by a paired test
// (likelihood breaking ties among those), and the staged search finds a known optimum on a
// synthetic scorer, scoring each incumbent once.
#include "tools/eval/policy_fit.h"

#include <set>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbor::tools::eval {
namespace {

using arbor::v1::PolicyConfig;

TEST(PolicyFit, StagesStartFromThePublishedLawAndHaveNoRepeats) {
  const std::vector<FitStage> stages = PolicyFitStages();
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0].candidates.size(), 9u);
  for (const FitStage& stage : stages) {
    std::set<std::string> names;
    for (const FitCandidate& candidate : stage.candidates) names.insert(candidate.name);
    EXPECT_EQ(names.size(), stage.candidates.size()) << stage.name;
  }
  PolicyConfig policy;
  stages[0].candidates[0].apply(policy);
  EXPECT_FLOAT_EQ(policy.sampling().temperature(), 0.666f) << "the published law first";
  EXPECT_FLOAT_EQ(policy.coefficients().ada_temp_logits(), 0.3f);
  PolicyConfig unchanged = policy;
  stages[1].candidates[0].apply(unchanged);
  stages[2].candidates[0].apply(unchanged);
  EXPECT_EQ(unchanged.SerializeAsString(), policy.SerializeAsString())
      << "later stages' incumbents change nothing";
}

// `n` steps at each of (H, V) = (2, 3), in the ADAPTIVE row, and (6, 6), in HEHV's.
MetricSamples AdaptiveAndHehvSteps(int n) {
  MetricSamples samples;
  for (int i = 0; i < 2 * n; ++i) {
    arbor::v1::Metrics m;
    m.set_entropy(i % 2 == 0 ? 2.0f : 6.0f);
    m.set_varentropy(i % 2 == 0 ? 3.0f : 6.0f);
    samples.Add(m);
  }
  return samples;
}

double Q(const MetricSamples& samples, const PolicyConfig& policy, SamplingField field, double q) {
  absl::StatusOr<double> value = SamplingQuantile(samples, policy, field, q);
  EXPECT_TRUE(value.ok()) << value.status();
  return value.value_or(-1.0);
}

TEST(PolicyFit, SamplingFollowsEachRowsFormula) {
  const MetricSamples samples = AdaptiveAndHehvSteps(500);
  const std::vector<FitStage> stages = PolicyFitStages();
  PolicyConfig published;
  // ADAPTIVE: T = 0.666·(1 + 0.3·5) = 1.665; HEHV: max(2.0, 0.666·(2.0 + 0)) = 2.0.
  EXPECT_NEAR(Q(samples, published, SamplingField::kTemperature, 0.1), 0.666 * 2.5, 1e-4);
  EXPECT_NEAR(Q(samples, published, SamplingField::kTemperature, 0.9), 2.0, 1e-6);
  // ADAPTIVE's min_p: clip(0.03·(1 − 0.5·5), 0.01, 0.5) = 0.01; HEHV keeps 0.03.
  EXPECT_NEAR(Q(samples, published, SamplingField::kMinP, 0.1), 0.01, 1e-6);
  EXPECT_NEAR(Q(samples, published, SamplingField::kMinP, 0.9), 0.03, 1e-6);

  PolicyConfig cold;
  stages[0].candidates.back().apply(cold);  // T0 0.2, no uncertainty terms.
  EXPECT_NEAR(Q(samples, cold, SamplingField::kTemperature, 0.1), 0.2, 1e-6);
  EXPECT_NEAR(Q(samples, cold, SamplingField::kTemperature, 0.9), 2.0, 1e-6)
      << "the published HEHV floor ignores T0";
  PolicyConfig scaled = cold;
  stages[1].candidates[1].apply(scaled);  // Floor 2.0·0.2/0.666.
  EXPECT_NEAR(Q(samples, scaled, SamplingField::kTemperature, 0.9), 2.0 * 0.2 / 0.666, 1e-4);
  PolicyConfig half = cold;
  stages[1].candidates[3].apply(half);  // Every row at T0/2: HEHV at 0.1, ADAPTIVE at 0.2.
  EXPECT_NEAR(Q(samples, half, SamplingField::kTemperature, 0.1), 0.1, 1e-6);
  EXPECT_NEAR(Q(samples, half, SamplingField::kTemperature, 0.9), 0.2, 1e-6);
  stages[2].candidates[2].apply(half);  // min_p 0.1 on every step.
  EXPECT_NEAR(Q(samples, half, SamplingField::kMinP, 0.1), 0.1, 1e-6);
}

// 100 items, right on [first, first + correct).
CandidateScore Score(int correct, double logprob, int first = 0) {
  CandidateScore s;
  s.right.assign(100, false);
  for (int i = first; i < first + correct; ++i) s.right[i] = true;
  s.mean_logprob = logprob;
  return s;
}

TEST(PolicyFit, ReplacesTheIncumbentOnlyWhenPairedBetter) {
  EXPECT_EQ(
      ChooseCandidate(std::vector<CandidateScore>{Score(40, -2), Score(41, -1), Score(39, 0)}), 0u)
      << "one item more is noise";
  EXPECT_EQ(
      ChooseCandidate(std::vector<CandidateScore>{Score(40, -2), Score(52, -1), Score(52, -0.5)}),
      2u)
      << "among better candidates, likelihood breaks the tie";
  EXPECT_EQ(
      ChooseCandidate(std::vector<CandidateScore>{Score(40, -2), Score(60, -3), Score(52, -0.5)}),
      1u);
  // 50 right against 40, but on other items: 30 only the candidate, 20 only the incumbent
  // (McNemar p ≈ 0.20).
  EXPECT_EQ(ChooseCandidate(std::vector<CandidateScore>{Score(40, -2), Score(50, -1, 20)}), 0u);
  EXPECT_EQ(Score(40, 0, 20).correct(), 40);
  EXPECT_DOUBLE_EQ(Score(40, 0).accuracy(), 0.4);
}

// A synthetic task: every step is one question answered right when it is sampled at T ≤ 0.3,
// and another answered right when its min_p is at least 0.1; colder policies are more likely.
// Its optimum: T0 0.2 without uncertainty terms (ADAPTIVE at 0.2), every row at T0/2 (HEHV at
// 0.1, colder than at T0), min_p 0.1 (0.2 ties it and is not strictly better).
TEST(PolicyFit, FindsTheOptimumOfASyntheticTaskScoringEachIncumbentOnce) {
  const MetricSamples samples = AdaptiveAndHehvSteps(50);
  std::vector<size_t> scored;
  const PolicyScorer scorer = [&](const std::vector<PolicyConfig>& policies)
      -> absl::StatusOr<std::vector<CandidateScore>> {
    scored.push_back(policies.size());
    std::vector<CandidateScore> scores;
    for (const PolicyConfig& policy : policies) {
      CandidateScore s;
      for (int i = 0; i <= 100; ++i) {
        const double q = i / 100.0;
        ASSIGN_OR_RETURN(const double t,
                         SamplingQuantile(samples, policy, SamplingField::kTemperature, q));
        ASSIGN_OR_RETURN(const double p,
                         SamplingQuantile(samples, policy, SamplingField::kMinP, q));
        s.right.push_back(t <= 0.3);
        s.right.push_back(p >= 0.1 - 1e-6);
        s.mean_logprob -= t;
      }
      scores.push_back(s);
    }
    return scores;
  };
  std::vector<std::string> tables;
  PolicyConfig policy;
  ASSERT_TRUE(FitPolicy(
                  samples, scorer, [&](const std::string& t) { tables.push_back(t); }, policy)
                  .ok());
  EXPECT_FLOAT_EQ(policy.sampling().temperature(), 0.2f);
  EXPECT_FLOAT_EQ(policy.coefficients().ada_temp_logits(), 0.0f);
  EXPECT_FLOAT_EQ(policy.coefficients().hehv_temp_floor(), 0.1f);
  EXPECT_FLOAT_EQ(policy.coefficients().hehv_temp_base(), 0.5f);
  EXPECT_FLOAT_EQ(policy.sampling().min_p(), 0.1f);
  EXPECT_FLOAT_EQ(policy.coefficients().ada_min_p_logits(), 0.0f);
  EXPECT_THAT(scored, ::testing::ElementsAre(9u, 3u, 3u)) << "incumbents carry their scores";
  ASSERT_EQ(tables.size(), 3u);
  for (const std::string& table : tables) EXPECT_THAT(table, ::testing::HasSubstr("<- chosen"));
  const size_t row = tables[1].find("every row at T0 x0.5");
  ASSERT_NE(row, std::string::npos);
  EXPECT_THAT(tables[1].substr(row, tables[1].find('\n', row) - row),
              ::testing::HasSubstr("<- chosen"));
}

}  // namespace
}  // namespace arbor::tools::eval
