// The named policies: each is a valid policy of the intended mode, the presets decode as their
// papers do (DeepConf: sampled traces, a warm-up, the group-confidence vote), the mode names set
// only the mode, and an unknown name lists the known ones.
#include "policy/policy_presets.h"

#include <cmath>
#include <string>
#include <vector>

#include "entropix/decision.h"
#include "entropix/sampler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "policy/policy_convert.h"

namespace arbor::policy {
namespace {

entropix::PolicyConfig Resolved(const std::string& name) {
  absl::StatusOr<v1::PolicyConfig> proto = NamedPolicy(name);
  EXPECT_TRUE(proto.ok()) << name << ": " << proto.status();
  absl::StatusOr<entropix::PolicyConfig> config =
      PolicyFromProto(proto.value_or(v1::PolicyConfig{}), entropix::PolicyConfig{});
  EXPECT_TRUE(config.ok()) << name << ": " << config.status();
  return config.value_or(entropix::PolicyConfig{});
}

entropix::Metrics WithEntropy(float h) {
  entropix::Metrics m;
  m.entropy = h;
  m.varentropy = 9.0f;  // Row 4 of the matrix, were it applied.
  return m;
}

TEST(PolicyPresets, EveryNameIsAValidPolicyOfItsMode) {
  EXPECT_EQ(Resolved("greedy").mode, entropix::PolicyMode::kCanonical);
  EXPECT_EQ(Resolved("sample").adaptive.n_samples, 1);
  EXPECT_EQ(Resolved("search").mode, entropix::PolicyMode::kSearch);
  EXPECT_EQ(Resolved("canonical").mode, entropix::PolicyMode::kCanonical);
  EXPECT_EQ(Resolved("trace").mode, entropix::PolicyMode::kTrace);
  // A mode name sets nothing else: the rest stays the server's.
  absl::StatusOr<v1::PolicyConfig> search = NamedPolicy("search");
  ASSERT_TRUE(search.ok());
  EXPECT_FALSE(search->has_sampling());
  EXPECT_FALSE(search->has_trace());
}

TEST(PolicyPresets, CotDecodingForksOnlyTheFirstTokenAndEagerOnlyAboveItsGate) {
  const entropix::PolicyConfig cot = Resolved("cot_decoding");
  entropix::DecisionContext first;
  first.generated = 0;
  entropix::DecisionContext later;
  later.generated = 3;
  EXPECT_EQ(entropix::Decide(WithEntropy(0.0f), cot, first).strategy, entropix::Strategy::kBranch);
  EXPECT_EQ(entropix::Decide(WithEntropy(9.0f), cot, later).strategy, entropix::Strategy::kArgmax);
  EXPECT_EQ(cot.ForkWidth(), 3);
  EXPECT_GE(cot.trace.max_traces, cot.ForkWidth()) << "the width, not the budget, bounds CoT";
  const entropix::PolicyConfig eager = Resolved("eager");
  EXPECT_EQ(entropix::Decide(WithEntropy(0.5f), eager, first).strategy,
            entropix::Strategy::kArgmax);
  EXPECT_EQ(entropix::Decide(WithEntropy(kEagerForkEntropy + 0.01f), eager, later).strategy,
            entropix::Strategy::kBranch);
  EXPECT_EQ(entropix::Decide(WithEntropy(kEagerForkEntropy), eager, later).strategy,
            entropix::Strategy::kArgmax);
}

TEST(PolicyPresets, CotDecodingForksOnlyFirstTokensAtLeastHalfAsLikelyAsTheBest) {
  const entropix::PolicyConfig cot = Resolved("cot_decoding");
  auto forks = [&](std::vector<float> probs) {
    std::vector<float> logits;
    for (float p : probs) logits.push_back(std::log(p));
    absl::StatusOr<std::vector<entropix::SampledToken>> chosen =
        entropix::TopBranchCandidates({logits, {}, 0.0}, cot.ForkWidth(), cot.ForkMinP());
    EXPECT_TRUE(chosen.ok()) << chosen.status();
    return chosen.ok() ? chosen->size() : 0;
  };
  EXPECT_EQ(forks({0.40f, 0.22f, 0.21f, 0.17f}), 3u) << "0.22 and 0.21 reach half of 0.40";
  EXPECT_EQ(forks({0.40f, 0.21f, 0.19f, 0.10f, 0.10f}), 2u) << "0.19 does not";
  EXPECT_EQ(forks({0.70f, 0.30f}), 1u) << "a confident first token: one trace";
  EXPECT_EQ(forks({0.30f, 0.25f, 0.25f, 0.20f}), 3u) << "the width still bounds the fork";
}

TEST(PolicyPresets, DeepConfSamplesItsTracesAndStopsThemAfterAWarmup) {
  const entropix::PolicyConfig deepconf = Resolved("deepconf");
  entropix::DecisionContext later;
  later.generated = 3;
  const entropix::Decision step = entropix::Decide(WithEntropy(0.0f), deepconf, later);
  EXPECT_EQ(step.strategy, entropix::Strategy::kAdaptive) << "a draw, even when calm";
  EXPECT_FLOAT_EQ(step.sampling.temperature, 0.2f);
  EXPECT_EQ(deepconf.ForkWidth(), 8);
  EXPECT_EQ(deepconf.trace.max_traces, 8);
  EXPECT_LT(deepconf.trace.warmup_traces, deepconf.ForkWidth()) << "some traces may stop";
  EXPECT_EQ(deepconf.trace.vote, entropix::TraceVote::kGroupConfidence);
}

TEST(PolicyPresets, UnknownNamesListTheKnownOnes) {
  absl::StatusOr<v1::PolicyConfig> bad = NamedPolicy("beam");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(bad.status().message()),
      ::testing::HasSubstr("greedy, sample, cot_decoding, eager, deepconf, search, canonical"));
}

}  // namespace
}  // namespace arbor::policy
