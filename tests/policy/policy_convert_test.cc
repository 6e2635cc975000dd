// Proto <-> entropix conversion: unset fields keep the given defaults, set fields (including
// explicit zeros) override, a full config round-trips, bad values fail validation with the
// field's name, and Metrics/Strategy map both ways.
#include "policy/policy_convert.h"

#include <gtest/gtest.h>

namespace arbor::policy {
namespace {

TEST(PolicyConvert, UnsetFieldsKeepTheDefaults) {
  entropix::PolicyConfig defaults;
  defaults.branch.width = 8;
  defaults.insert.tokens = {2564};
  defaults.mode = entropix::PolicyMode::kCanonical;
  v1::PolicyConfig proto;
  proto.mutable_sampling()->set_min_p(0.0f);  // Explicit zero overrides.
  proto.mutable_branch()->set_max_len(7);
  proto.set_attention_mode(v1::ATTENTION_MODE_REFERENCE);
  proto.mutable_branch()->set_mode(v1::BRANCH_MODE_UNSPECIFIED);
  auto c = PolicyFromProto(proto, defaults);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->sampling.min_p, 0.0f);
  EXPECT_EQ(c->sampling.temperature, defaults.sampling.temperature);
  EXPECT_EQ(c->branch.max_len, 7);
  EXPECT_EQ(c->branch.width, 8);
  EXPECT_EQ(c->branch.mode, entropix::BranchMode::kRollout);
  EXPECT_EQ(c->insert.tokens, std::vector<int32_t>{2564});
  EXPECT_EQ(c->mode, entropix::PolicyMode::kCanonical);
  EXPECT_EQ(c->attention_mode, entropix::AttentionMode::kReference);
}

TEST(PolicyConvert, FullConfigRoundTrips) {
  entropix::PolicyConfig c;
  c.mode = entropix::PolicyMode::kCanonical;
  c.sampling = {1.1f, 0.8f, 40, 0.05f};
  c.thresholds.hehv_entropy = 3.5f;
  c.coefficients.ada_top_k_agree = 0.25f;
  c.coefficients.lehv_top_k_min = 3;
  c.branch.width = 6;
  c.branch.mode = entropix::BranchMode::kBeam;
  c.branch.candidate_min_p = 0.1f;
  c.insert.tokens = {1, 2, 3};
  c.insert.cooldown = 5;
  c.backspace.max_per_job = 2;
  c.adaptive.n_samples = 9;
  c.adaptive.w_interaction = 0.7f;
  c.attention_mode = entropix::AttentionMode::kReference;
  c.reference_len = 1024;
  const v1::PolicyConfig proto = PolicyToProto(c);
  auto back = PolicyFromProto(proto, entropix::PolicyConfig{});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(PolicyToProto(*back).SerializeAsString(), proto.SerializeAsString());
  EXPECT_EQ(back->branch.mode, entropix::BranchMode::kBeam);
  EXPECT_EQ(back->coefficients.lehv_top_k_min, 3);
  EXPECT_EQ(back->adaptive.w_interaction, 0.7f);
  EXPECT_EQ(back->insert.tokens, (std::vector<int32_t>{1, 2, 3}));
}

TEST(PolicyConvert, TraceModeAndOptionsRoundTrip) {
  entropix::PolicyConfig c;
  c.mode = entropix::PolicyMode::kTrace;
  c.trace = {.width = 5,
             .candidate_min_p = 0.2f,
             .max_depth = 3,
             .fork_first = false,
             .fork_entropy = 2.5f,
             .max_traces = 7,
             .token_budget = 300,
             .aggregate = false,
             .answer_pattern = R"(= (\d+))",
             .temperature = 0.7f,
             .warmup_traces = 4,
             .confidence_window = 8,
             .keep_fraction = 0.5f,
             .vote = entropix::TraceVote::kGroupConfidence};
  const v1::PolicyConfig proto = PolicyToProto(c);
  EXPECT_EQ(proto.trace().vote(), v1::TRACE_VOTE_GROUP_CONFIDENCE);
  EXPECT_EQ(proto.mode(), v1::POLICY_MODE_TRACE);
  auto back = PolicyFromProto(proto, entropix::PolicyConfig{});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(PolicyToProto(*back).SerializeAsString(), proto.SerializeAsString());
  EXPECT_EQ(back->ForkWidth(), 5) << "TRACE forks with its own width, not branch.width";
  EXPECT_EQ(back->MaxForkDepth(), 3);
  EXPECT_EQ(back->trace.answer_pattern, R"(= (\d+))");
  EXPECT_EQ(back->trace.warmup_traces, 4);
  EXPECT_EQ(back->trace.vote, entropix::TraceVote::kGroupConfidence);
  // Unset trace fields keep the defaults.
  v1::PolicyConfig partial;
  partial.mutable_trace()->set_max_traces(2);
  auto merged = PolicyFromProto(partial, entropix::PolicyConfig{});
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->trace.width, 3);
  EXPECT_EQ(merged->trace.max_traces, 2);
}

TEST(PolicyConvert, InvalidValuesNameTheField) {
  v1::PolicyConfig proto;
  proto.mutable_branch()->set_width(1);
  auto c = PolicyFromProto(proto, entropix::PolicyConfig{});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("branch.width: 1 is outside [2, 64]"),
            absl::string_view::npos)
      << c.status();
  v1::PolicyConfig bad_enum;
  bad_enum.set_mode(static_cast<v1::PolicyMode>(17));
  EXPECT_NE(PolicyFromProto(bad_enum, {}).status().message().find("mode"), absl::string_view::npos);
}

TEST(PolicyConvert, MetricsBothWays) {
  entropix::Metrics m{1, 2, 3, 4, 5, 6, 7, 8};
  const v1::Metrics p = MetricsToProto(m);
  EXPECT_EQ(p.entropy(), 1);
  EXPECT_EQ(p.attn_head_varentropy(), 5);
  EXPECT_EQ(p.logsumexp(), 8);
  const entropix::Metrics back = MetricsFromProto(p);
  EXPECT_EQ(back.varentropy, 2);
  EXPECT_EQ(back.agreement, 6);
  EXPECT_EQ(back.interaction_strength, 7);
  EXPECT_EQ(MetricsToProto(back).SerializeAsString(), p.SerializeAsString());
}

TEST(PolicyConvert, StrategyBothWays) {
  for (int i = 1; i <= 9; ++i) {
    const auto proto = static_cast<v1::Strategy>(i);
    auto s = StrategyFromProto(proto);
    ASSERT_TRUE(s.ok()) << i;
    EXPECT_EQ(StrategyToProto(*s), proto);
  }
  EXPECT_EQ(StrategyToProto(entropix::Strategy::kBranchSample), v1::STRATEGY_BRANCH_SAMPLE);
  EXPECT_FALSE(StrategyFromProto(v1::STRATEGY_UNSPECIFIED).ok());
}

}  // namespace
}  // namespace arbor::policy
