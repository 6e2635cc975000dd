// The sampler: Philox known answers, the transformed distribution against a float64 reference
// that sorts everything, chi-square bounds on seeded draws, filter edge cases, reproducibility
// across orders and threads, BRANCH candidates, ADAPTIVE best-of-n and the per-step policy.
#include "entropix/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "entropix/policy_step.h"
#include "tests/support/test_seed.h"

namespace arbor::entropix {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Rng, PhiloxKnownAnswers) {  // Random123's kat_vectors for philox4x32-10.
  using A4 = std::array<uint32_t, 4>;
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {0, 0}), (A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox4x32({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}),
            (A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Rng, UniformsAreInRangeAndEveryKeyFieldMatters) {
  double sum = 0.0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = UniformDouble({42, static_cast<uint32_t>(i), 0, 0});
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);  // 5.5 standard deviations.
  const RngKey key{7, 11, 13, 17};
  std::set<double> values = {UniformDouble(key)};
  for (RngKey other : {RngKey{8, 11, 13, 17}, RngKey{7, 12, 13, 17}, RngKey{7, 11, 14, 17},
                       RngKey{7, 11, 13, 18}, RngKey{7ull | (1ull << 40), 11, 13, 17}}) {
    values.insert(UniformDouble(other));
  }
  EXPECT_EQ(values.size(), 6u);
  EXPECT_EQ(UniformDouble(key), UniformDouble(key));
}

// The pipeline of docs/ARCHITECTURE.md §4.3 in float64 with a full sort, written independently.
std::map<int, double> ReferenceDistribution(const std::vector<float>& logits,
                                            const SamplingParams& p, std::set<int> banned = {}) {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(logits.size()); ++i) {
    if (!banned.count(i) && logits[i] != -kInf) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  const double max = logits[order[0]];
  std::vector<double> prob;
  double z = 0.0;
  for (int i : order) z += std::exp((logits[i] - max) / p.temperature);
  for (int i : order) prob.push_back(std::exp((logits[i] - max) / p.temperature) / z);
  std::vector<int> keep;
  for (size_t r = 0; r < order.size(); ++r) {
    if (prob[r] >= p.min_p * prob[0] && (p.top_k <= 0 || static_cast<int>(keep.size()) < p.top_k)) {
      keep.push_back(r);
    }
  }
  double kept_mass = 0.0;
  for (int r : keep) kept_mass += prob[r];
  std::map<int, double> out;
  double cumulative = 0.0;
  for (int r : keep) {
    if (!out.empty() && cumulative >= p.top_p * kept_mass) break;
    out[order[r]] = prob[r];
    cumulative += prob[r];
  }
  for (auto& [id, q] : out) q /= cumulative;
  return out;
}

TEST(Sampler, TransformMatchesFloat64Reference) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = 1 + rng() % 300;
    std::vector<float> logits(n);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (float& x : logits) x = normal(rng);
    // Every other trial: logits on a coarse grid (many ties, ordered by index), some −inf and
    // some banned tokens, one finite token always left.
    std::set<int> banned;
    if (trial % 2 == 1) {
      for (float& x : logits) x = std::round(x * 2.0f) / 2.0f;
      for (int i = 1; i < n; ++i) {
        if (rng() % 10 == 0) logits[i] = -kInf;
        if (rng() % 10 == 0) banned.insert(i);
      }
    }
    const std::vector<int32_t> banned_ids(banned.begin(), banned.end());
    SamplingParams p;
    p.temperature = std::uniform_real_distribution<float>(0.1f, 3.0f)(rng);
    p.top_p = std::uniform_real_distribution<float>(0.05f, 1.0f)(rng);
    p.top_k = rng() % 3 == 0 ? 0 : 1 + rng() % 60;
    p.min_p = rng() % 2 ? 0.0f : std::uniform_real_distribution<float>(0.0f, 0.3f)(rng);
    auto got = TransformedDistribution({logits, {}, 0.0}, p, banned_ids);
    ASSERT_TRUE(got.ok()) << got.status();
    const std::map<int, double> want = ReferenceDistribution(logits, p, banned);
    SCOPED_TRACE(testing::Message() << "trial " << trial << " T " << p.temperature << " top_p "
                                    << p.top_p << " top_k " << p.top_k << " min_p " << p.min_p);
    // Membership may differ only for a token sitting on a filter boundary within rounding; with
    // continuous random logits that has probability ~0, so require equality.
    ASSERT_EQ(got->size(), want.size());
    for (const WeightedToken& t : *got) {
      ASSERT_TRUE(want.count(t.id)) << t.id;
      EXPECT_NEAR(t.prob, want.at(t.id), 1e-6 * want.at(t.id));  // (l − l_max) is fp32.
      EXPECT_EQ(t.logprob, logits[t.id]);
    }
  }
}

TEST(Sampler, EmpiricalFrequenciesPassChiSquare) {
  // Deterministic seeds: the bound is the chi-square 1e-6 quantile for 9 degrees of freedom, so
  // a correct sampler fails with probability ~1e-6 on any seed and this seed is fixed.
  const std::vector<float> logits = {2.0f,  1.5f,  1.5f,  1.0f,  0.3f, 0.0f,
                                     -0.5f, -1.0f, -2.0f, -3.0f, -9.0f};
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 10;
  p.top_p = 0.999f;
  p.min_p = 0.001f;
  auto dist = TransformedDistribution({logits, {}, 0.0}, p);
  ASSERT_TRUE(dist.ok());
  std::map<int, double> expected;
  for (const WeightedToken& t : *dist) expected[t.id] = t.prob;
  const int draws = 40000;
  std::map<int, int> counts;
  for (int i = 0; i < draws; ++i) {
    auto t = Sample({logits, {}, 0.0}, p, {2024, static_cast<uint32_t>(i), 3, 0});
    ASSERT_TRUE(t.ok());
    ASSERT_TRUE(expected.count(t->id)) << "drew filtered token " << t->id;
    ++counts[t->id];
  }
  double chi2 = 0.0;
  for (const auto& [id, q] : expected) {
    const double e = q * draws;
    chi2 += (counts[id] - e) * (counts[id] - e) / e;
  }
  EXPECT_LT(chi2, 42.0) << "df " << expected.size() - 1;
}

TEST(Sampler, FilterEdgeCases) {
  const std::vector<float> tied = {1.0f, 3.0f, 3.0f, 3.0f, 2.0f};
  SamplingParams p{1.0f, 1.0f, 2, 0.0f};
  auto top2 = TransformedDistribution({tied, {}, 0.0}, p);
  ASSERT_TRUE(top2.ok());
  ASSERT_EQ(top2->size(), 2u);  // Ties at the top_k boundary: lower index first.
  EXPECT_EQ((*top2)[0].id, 1);
  EXPECT_EQ((*top2)[1].id, 2);
  EXPECT_NEAR((*top2)[0].prob, 0.5, 1e-12);
  p = {1.0f, 1.0f, 0, 0.0f};  // top_p = 1, no top_k, no min_p: everything.
  EXPECT_EQ(TransformedDistribution({tied, {}, 0.0}, p)->size(), 5u);
  p.top_p = 1e-6f;  // Nucleus keeps at least one token.
  EXPECT_EQ(TransformedDistribution({tied, {}, 0.0}, p)->size(), 1u);
  p = {1.0f, 1.0f, 0, 0.5f};  // min_p: exp(2−3) = 0.37 < 0.5 drops index 4 and 0.
  EXPECT_EQ(TransformedDistribution({tied, {}, 0.0}, p)->size(), 3u);
  p.min_p = 0.3f;
  EXPECT_EQ(TransformedDistribution({tied, {}, 0.0}, p)->size(), 4u);
  const std::vector<float> single = {-4.0f};
  const std::vector<int32_t> single_id = {77};
  auto only = Sample({single, single_id, -4.0}, SamplingParams{}, {1, 2, 3, 4});
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(only->id, 77);
  EXPECT_EQ(only->logprob, 0.0f);
  const std::vector<float> with_bad = {0.0f, NAN};
  EXPECT_EQ(Sample({with_bad, {}, 0.0}, SamplingParams{}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(Sample({tied, {}, 0.0}, SamplingParams{0.0f, 1.0f, 1, 0.0f}, {}).ok());
  const std::vector<int32_t> wrong_ids = {1, 2};
  EXPECT_FALSE(Sample({tied, wrong_ids, 0.0}, SamplingParams{}, {}).ok());
}

TEST(Sampler, BannedTokensAreNeverDrawnAndArgmaxSkipsThem) {
  const std::vector<float> logits = {5.0f, 4.0f, -kInf, 1.0f};
  const std::vector<int32_t> banned = {0};
  SamplingParams p{1.0f, 1.0f, 0, 0.0f};
  for (uint32_t i = 0; i < 2000; ++i) {
    auto t = Sample({logits, {}, 0.0}, p, {9, i, 0, 0}, banned);
    ASSERT_TRUE(t.ok());
    EXPECT_NE(t->id, 0);
    EXPECT_NE(t->id, 2);  // −inf is impossible.
  }
  // p_max for min_p is taken after the ban: token 3 survives min_p 0.04 relative to token 1.
  p.min_p = 0.04f;
  EXPECT_EQ(TransformedDistribution({logits, {}, 0.0}, p, banned)->size(), 2u);
  EXPECT_EQ(Argmax({logits, {}, 0.0}, banned)->id, 1);
  EXPECT_EQ(Argmax({logits, {}, 0.0})->id, 0);
  const std::vector<int32_t> all = {0, 1, 3};
  EXPECT_EQ(Sample({logits, {}, 0.0}, p, {}, all).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(Argmax({logits, {}, 0.0}, all).ok());
}

TEST(Sampler, SameKeySameTokenInAnyOrderAndThread) {
  std::mt19937 rng(5);
  std::vector<float> logits(128256);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (float& x : logits) x = normal(rng);
  const SamplingParams p{1.2f, 0.95f, 100, 0.0f};
  const int n = 64;
  std::vector<int32_t> sequential(n);
  for (int i = 0; i < n; ++i) {
    sequential[i] = Sample({logits, {}, 0.0}, p, {99, static_cast<uint32_t>(i), 1, 0})->id;
  }
  std::vector<int32_t> parallel(n, -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = n - 1 - t; i >= 0; i -= 4) {  // Reverse, interleaved order.
        parallel[i] = Sample({logits, {}, 0.0}, p, {99, static_cast<uint32_t>(i), 1, 0})->id;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(parallel, sequential);
  EXPECT_GT(std::set<int32_t>(sequential.begin(), sequential.end()).size(), 10u);
}

TEST(Sampler, BranchCandidatesAreDistinctAndQualify) {
  const std::vector<float> logits = {3.0f, 2.9f, 2.5f, 2.0f, 0.0f, -5.0f};
  const SamplingParams p{1.0f, 1.0f, 0, 0.0f};
  for (uint32_t pos = 0; pos < 200; ++pos) {
    auto c = SelectBranchCandidates({logits, {}, 0.0}, p, 4, 0.02f, {1, pos, 0, 0});
    ASSERT_TRUE(c.ok());
    ASSERT_EQ(c->size(), 4u);
    std::set<int32_t> ids;
    for (const SampledToken& t : *c) ids.insert(t.id);
    EXPECT_EQ(ids.size(), 4u);
    EXPECT_FALSE(ids.count(5));  // p/p_max = e^-8 < 0.02.
  }
  // Only three tokens reach 0.4·p_max (e^-1 = 0.37 does not): width 4 yields three.
  auto few = SelectBranchCandidates({logits, {}, 0.0}, p, 4, 0.4f, {1, 0, 0, 0});
  ASSERT_TRUE(few.ok());
  EXPECT_EQ(few->size(), 3u);
  // First draws follow the distribution: token 0 comes first more often than token 3.
  int first0 = 0, first3 = 0;
  for (uint32_t pos = 0; pos < 2000; ++pos) {
    const int32_t id =
        SelectBranchCandidates({logits, {}, 0.0}, p, 2, 0.02f, {3, pos, 0, 0})->front().id;
    first0 += id == 0;
    first3 += id == 3;
  }
  EXPECT_GT(first0, first3);
}

TEST(Sampler, TopBranchCandidatesAreTheMostLikelyInOrder) {
  // Ids out of order, so the order comes from the probabilities, not the positions.
  const std::vector<float> logits = {0.0f, 3.0f, 2.5f, 2.9f, -5.0f};
  const std::vector<int32_t> ids = {40, 41, 42, 43, 44};
  auto c = TopBranchCandidates({logits, ids, 0.0}, 3, 0.02f);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 3u);
  EXPECT_EQ((*c)[0].id, 41);
  EXPECT_EQ((*c)[1].id, 43);
  EXPECT_EQ((*c)[2].id, 42);
  EXPECT_FLOAT_EQ((*c)[0].logprob, 3.0f) << "logprobs at T = 1 against the row's logsumexp";
  // The min_p floor is relative to p_max (e^-3 ≈ 0.05 keeps id 40, e^-8 drops id 44).
  auto all = TopBranchCandidates({logits, ids, 0.0}, 10, 0.04f);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 4u);
  EXPECT_FALSE(TopBranchCandidates({logits, ids, 0.0}, 0, 0.0f).ok());
}

TEST(Sampler, AdaptiveKeepsTheBestOfItsDraws) {
  std::mt19937 rng(11);
  std::vector<float> logits(500);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& x : logits) x = normal(rng);
  const SamplingParams p{1.5f, 1.0f, 0, 0.0f};
  for (uint32_t pos = 0; pos < 50; ++pos) {
    const RngKey key{5, pos, 2, 0};
    auto best = SampleAdaptive({logits, {}, 1.0}, p, 5, 0.25, key);
    ASSERT_TRUE(best.ok());
    float want = -kInf;
    for (uint32_t i = 0; i < 5; ++i) {
      want = std::max(want, Sample({logits, {}, 1.0}, p, key.WithDraw(i))->logprob);
    }
    EXPECT_EQ(best->token.logprob, want);
    EXPECT_NEAR(best->score, want + 0.25, 1e-6);
  }
}

TEST(PolicyStep, StopsOrFallsBackOnStructuralDecisions) {
  std::vector<float> logits(1000, 0.0f);  // High entropy, zero varentropy: HELV → INSERT.
  auto lm = ComputeLogitMetrics(logits.data(), logits.size(), 5);
  ASSERT_TRUE(lm.ok());
  PolicyConfig config;
  config.insert.tokens = {2564};
  const AttentionMetrics attention;
  const DecisionContext context;
  StepOptions options;
  auto stop = PolicyStep({logits, {}, lm->logsumexp}, *lm, attention, config, context,
                         {1, 10, 0, 0}, options);
  ASSERT_TRUE(stop.ok()) << stop.status();
  EXPECT_EQ(stop->decision.strategy, Strategy::kInsert);
  EXPECT_FALSE(stop->token.has_value());
  EXPECT_NEAR(stop->metrics.entropy, std::log2(1000.0), 1e-4);
  options.stop_on_structural = false;
  auto hot = PolicyStep({logits, {}, lm->logsumexp}, *lm, attention, config, context, {1, 10, 0, 0},
                        options);
  ASSERT_TRUE(hot.ok());
  EXPECT_EQ(hot->decision.strategy, Strategy::kHotSample);
  ASSERT_TRUE(hot->token.has_value());
  EXPECT_NEAR(hot->token->logprob, -std::log(1000.0), 1e-4);
  EXPECT_EQ(hot->token->id,
            Sample({logits, {}, lm->logsumexp}, hot->decision.sampling, {1, 10, 0, 0})->id);
}

TEST(PolicyStep, ArgmaxAndAdaptiveRespectBans) {
  std::vector<float> sharp(1000, -30.0f);
  sharp[7] = 10.0f;  // LELV.
  sharp[8] = -5.0f;
  auto lm = ComputeLogitMetrics(sharp.data(), sharp.size(), 0);
  ASSERT_TRUE(lm.ok());
  const PolicyConfig config;
  const std::vector<int32_t> ban = {7};
  auto step = PolicyStep({sharp, {}, lm->logsumexp}, *lm, {}, config, {}, {}, {});
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(step->decision.strategy, Strategy::kArgmax);
  EXPECT_EQ(step->token->id, 7);
  auto banned = PolicyStep({sharp, {}, lm->logsumexp}, *lm, {}, config, {}, {}, {ban, true});
  EXPECT_EQ(banned->token->id, 8);
  std::vector<float> mid = {1.0f, 0.5f, 0.0f, -0.5f};  // H ≈ 1.9, V small: ADAPTIVE.
  auto mlm = ComputeLogitMetrics(mid.data(), mid.size(), 0);
  auto adaptive = PolicyStep({mid, {}, mlm->logsumexp}, *mlm, {}, config, {}, {3, 4, 0, 0}, {});
  ASSERT_TRUE(adaptive.ok());
  EXPECT_EQ(adaptive->decision.strategy, Strategy::kAdaptive);
  EXPECT_EQ(adaptive->token->id,
            SampleAdaptive({mid, {}, mlm->logsumexp}, adaptive->decision.sampling, 5,
                           ConfidenceTerm(adaptive->metrics, config.adaptive), {3, 4, 0, 0})
                ->token.id);
}

}  // namespace
}  // namespace arbor::entropix
