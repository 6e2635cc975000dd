// Sampling from the top CandidatesNeeded() candidates equals sampling from the whole row:
// for every row of the decision matrix, many seeds, random rows (flat and
// sharp, with ties, −inf entries and banned tokens among the best), random attention metrics
// and random policies (top_k up to 1,024, LEHV widening up to ×3), PolicyStep on the candidates
// takes the same strategy and the same token with the same logprob, bit for bit, as on the full
// row. And MaxPolicyTopK bounds every top_k Decide() produces.
#include "entropix/candidates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "entropix/decision.h"
#include "entropix/logit_metrics.h"
#include "entropix/policy_step.h"
#include "tests/support/test_seed.h"

namespace arbor::entropix {
namespace {

constexpr int kVocab = 8192;

// A row whose shape varies with the seed: logit scale from near-flat to sharp, some ties, a few
// impossible tokens.
std::vector<float> RandomRow(std::mt19937& rng) {
  const float scale = std::uniform_real_distribution<float>(0.05f, 6.0f)(rng);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> row(kVocab);
  for (float& x : row) x = normal(rng);
  std::uniform_int_distribution<int> index(0, kVocab - 1);
  for (int i = 0; i < 200; ++i) row[index(rng)] = row[index(rng)];  // Ties.
  for (int i = 0; i < 20; ++i) row[index(rng)] = -std::numeric_limits<float>::infinity();
  return row;
}

// The row's k best as a backend's reduction selects them on the host.
CandidateRow TopCandidates(const std::vector<float>& row, int32_t k) {
  const int n = static_cast<int>(row.size());
  return CandidateRow::Of(SummarizeLogits(row.data(), n, std::min(k, n), -1)->best);
}

PolicyConfig RandomPolicy(std::mt19937& rng, MatrixRow row) {
  PolicyConfig config;
  config.sampling.top_k = std::uniform_int_distribution<int32_t>(1, 1024)(rng);
  config.sampling.min_p = std::uniform_real_distribution<float>(0.0f, 0.1f)(rng);
  config.sampling.top_p = std::uniform_real_distribution<float>(0.5f, 1.0f)(rng);
  config.coefficients.lehv_top_k_agreement = std::uniform_real_distribution<float>(-2, 2)(rng);
  config.coefficients.lehv_top_k_min = std::uniform_int_distribution<int32_t>(1, 300)(rng);
  config.insert.tokens = {5};
  // Thresholds that put every state in `row`.
  Thresholds& t = config.thresholds;
  t = {0, 0, 64, 0, 0, 4096, 64, 4096};  // Nothing matches: ADAPTIVE.
  if (row == MatrixRow::kLelv) t.lelv_entropy = 64, t.lelv_varentropy = 4096;
  if (row == MatrixRow::kHelv) t.helv_entropy = 0, t.helv_varentropy = 4096;
  if (row == MatrixRow::kLehv) t.lehv_entropy = 64, t.lehv_varentropy = 0;
  if (row == MatrixRow::kHehv) t.hehv_entropy = 0, t.hehv_varentropy = 0;
  return config;
}

AttentionMetrics RandomAttention(std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  AttentionMetrics a;
  a.attn_entropy = 8 * u(rng);
  a.attn_varentropy = 4 * u(rng);
  a.agreement = 2 * u(rng);
  a.interaction_strength = 10 * u(rng);
  return a;
}

class CandidatesEqualTheFullRow : public ::testing::TestWithParam<MatrixRow> {};

TEST_P(CandidatesEqualTheFullRow, SameStrategyTokenAndLogprob) {
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  int compared = 0, fewer_candidates = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const std::vector<float> row = RandomRow(rng);
    absl::StatusOr<LogitMetrics> metrics = ComputeLogitMetrics(row.data(), kVocab, 0);
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    const PolicyConfig config = RandomPolicy(rng, GetParam());
    // Bans: sometimes the very best tokens (BACKSPACE removed them), sometimes random ones.
    const CandidateRow best = TopCandidates(row, 3);
    std::vector<int32_t> banned;
    const int bans = std::uniform_int_distribution<int>(0, 3)(rng);
    for (int b = 0; b < bans; ++b) {
      banned.push_back(trial % 2 == 0 ? best.ids[b]
                                      : std::uniform_int_distribution<int32_t>(0, kVocab - 1)(rng));
    }
    const AttentionMetrics attention = RandomAttention(rng);
    DecisionContext context;
    context.position = 100;
    context.previous_backspaceable = true;
    StepOptions options;
    options.banned = banned;
    options.stop_on_structural = false;  // Structural rows take their fallback samples.
    const RngKey key{seed, static_cast<uint32_t>(trial), 0, 0};

    const CandidateRow candidates = TopCandidates(row, CandidatesNeeded(config, banned.size()));
    fewer_candidates += candidates.ids.size() < row.size() ? 1 : 0;
    const absl::StatusOr<StepOutcome> full =
        PolicyStep(Candidates{row, {}, metrics->logsumexp}, *metrics, attention, config, context,
                   key, options);
    const absl::StatusOr<StepOutcome> top = PolicyStep(
        candidates.View(metrics->logsumexp), *metrics, attention, config, context, key, options);
    ASSERT_EQ(full.ok(), top.ok()) << full.status() << " / " << top.status();
    if (!full.ok()) continue;
    ASSERT_EQ(full->decision.row, GetParam());
    EXPECT_EQ(top->decision.strategy, full->decision.strategy);
    ASSERT_TRUE(full->token.has_value() && top->token.has_value());
    EXPECT_EQ(top->token->id, full->token->id) << "trial " << trial;
    EXPECT_EQ(top->token->logprob, full->token->logprob) << "trial " << trial;
    ++compared;
  }
  EXPECT_GE(compared, 140);
  EXPECT_EQ(fewer_candidates, compared) << "every trial must sample from fewer than the row";
}

INSTANTIATE_TEST_SUITE_P(EveryMatrixRow, CandidatesEqualTheFullRow,
                         ::testing::Values(MatrixRow::kLelv, MatrixRow::kHelv, MatrixRow::kLehv,
                                           MatrixRow::kHehv, MatrixRow::kAdaptive));

TEST(MaxPolicyTopK, BoundsEveryTopKTheDecisionCanAskFor) {
  std::mt19937 rng(TestSeed());
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (int trial = 0; trial < 20000; ++trial) {
    const MatrixRow row = static_cast<MatrixRow>(1 + trial % 5);
    const PolicyConfig config = RandomPolicy(rng, row);
    Metrics m;
    m.entropy = 12 * u(rng);
    m.varentropy = 30 * u(rng);
    m.attn_entropy = 8 * u(rng);
    m.attn_varentropy = 4 * u(rng);
    m.agreement = 2 * u(rng);
    m.interaction_strength = 50 * u(rng);
    const Decision decision = Decide(m, config, DecisionContext{});
    ASSERT_LE(decision.sampling.top_k, MaxPolicyTopK(config)) << "trial " << trial;
  }
  PolicyConfig defaults;
  EXPECT_EQ(MaxPolicyTopK(defaults), 100) << "ADAPTIVE's clip dominates the defaults";
  EXPECT_EQ(CandidatesNeeded(defaults, 2), 102);
}

TEST(TopCandidates, CanonicalOrderAndAllWhenKExceedsTheRow) {
  const std::vector<float> row = {1.0f, 3.0f, 3.0f, -1.0f, 2.0f};
  const CandidateRow top = TopCandidates(row, 3);
  EXPECT_EQ(top.ids, (std::vector<int32_t>{1, 2, 4}));
  EXPECT_EQ(top.logits, (std::vector<float>{3.0f, 3.0f, 2.0f}));
  EXPECT_EQ(TopCandidates(row, 100).ids.size(), row.size());
}

}  // namespace
}  // namespace arbor::entropix
