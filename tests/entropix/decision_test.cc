// The decision matrix row by row and at every threshold boundary, SEARCH against CANONICAL,
// cooldowns and budgets; TRACE's fork rule; the adjusted parameters against the canonical formulas
// in float64; and PolicyConfig validation messages.
#include "entropix/decision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace arbor::entropix {
namespace {

Metrics At(float h, float v) {
  Metrics m;
  m.entropy = h;
  m.varentropy = v;
  m.attn_entropy = 1.5f;
  m.attn_varentropy = 0.4f;
  m.agreement = 0.3f;
  m.interaction_strength = 2.0f;
  return m;
}

DecisionContext Free() {
  DecisionContext c;
  c.position = 100;
  c.previous_backspaceable = true;
  return c;
}

PolicyConfig Canonical() {
  PolicyConfig c;
  c.mode = PolicyMode::kCanonical;
  return c;
}

TEST(Decision, RowsInSearchMode) {
  const PolicyConfig config;
  struct Case {
    float h, v;
    MatrixRow row;
    Strategy strategy;
  };
  const Case cases[] = {
      {0.05f, 0.05f, MatrixRow::kLelv, Strategy::kArgmax},
      {6.0f, 0.05f, MatrixRow::kHelv, Strategy::kInsert},
      {2.0f, 6.0f, MatrixRow::kLehv, Strategy::kBranch},
      {5.5f, 6.0f, MatrixRow::kHehv, Strategy::kBackspace},
      {2.0f, 2.0f, MatrixRow::kAdaptive, Strategy::kAdaptive},
      {0.05f, 0.2f, MatrixRow::kAdaptive, Strategy::kAdaptive},
  };
  for (const Case& c : cases) {
    const Decision d = Decide(At(c.h, c.v), config, Free());
    EXPECT_EQ(d.row, c.row) << c.h << " " << c.v;
    EXPECT_EQ(d.strategy, c.strategy) << StrategyName(d.strategy);
    EXPECT_EQ(d.blocked_by, BlockReason::kNone);
  }
}

TEST(Decision, BoundariesAreStrict) {
  const PolicyConfig config;
  // Row 1 needs H < 0.1 and V < 0.1.
  EXPECT_EQ(Decide(At(0.1f, 0.0f), config, Free()).row, MatrixRow::kAdaptive);
  EXPECT_EQ(Decide(At(0.0999f, 0.0999f), config, Free()).row, MatrixRow::kLelv);
  // Row 2 needs H > 5 and V < 0.1.
  EXPECT_EQ(Decide(At(5.0f, 0.0f), config, Free()).row, MatrixRow::kAdaptive);
  EXPECT_EQ(Decide(At(5.0001f, 0.0f), config, Free()).row, MatrixRow::kHelv);
  EXPECT_EQ(Decide(At(5.0001f, 0.1f), config, Free()).row, MatrixRow::kAdaptive);
  // Row 3 needs H < 5 and V > 5; at H = 5 exactly row 4 takes it (H > 3).
  EXPECT_EQ(Decide(At(4.999f, 5.0f), config, Free()).row, MatrixRow::kAdaptive);
  EXPECT_EQ(Decide(At(4.999f, 5.001f), config, Free()).row, MatrixRow::kLehv);
  EXPECT_EQ(Decide(At(5.0f, 5.001f), config, Free()).row, MatrixRow::kHehv);
  // Row 4 is reachable only with H ≥ 5 (row 3 catches 3 < H < 5 first).
  EXPECT_EQ(Decide(At(3.5f, 6.0f), config, Free()).row, MatrixRow::kLehv);
  EXPECT_EQ(Decide(At(9.0f, 5.0f), config, Free()).row, MatrixRow::kAdaptive);
  // Thresholds are configurable.
  PolicyConfig custom;
  custom.thresholds.lelv_entropy = 1.0f;
  custom.thresholds.lelv_varentropy = 1.0f;
  EXPECT_EQ(Decide(At(0.5f, 0.5f), custom, Free()).row, MatrixRow::kLelv);
  custom.thresholds.hehv_entropy = 1.0f;
  custom.thresholds.lehv_entropy = 0.5f;
  EXPECT_EQ(Decide(At(2.0f, 6.0f), custom, Free()).row, MatrixRow::kHehv);
}

TEST(Decision, CanonicalModeOnlyAdjustsTheSample) {
  const PolicyConfig config = Canonical();
  EXPECT_EQ(Decide(At(2.0f, 6.0f), config, Free()).strategy, Strategy::kBranchSample);
  EXPECT_EQ(Decide(At(5.5f, 6.0f), config, Free()).strategy, Strategy::kResample);
  EXPECT_EQ(Decide(At(2.0f, 6.0f), config, Free()).blocked_by, BlockReason::kNone);
  // Row 2 emits the thinking token, then (one-token cooldown) the HELV hot sample.
  PolicyConfig with_tokens = config;
  with_tokens.insert.tokens = {2564};
  const Decision insert = Decide(At(6.0f, 0.0f), with_tokens, Free());
  EXPECT_EQ(insert.strategy, Strategy::kInsert);
  EXPECT_EQ(insert.insert_tokens, std::vector<int32_t>{2564});
  DecisionContext after = Free();
  after.previous_is_insert_token = true;
  const Decision hot = Decide(At(6.0f, 0.0f), with_tokens, after);
  EXPECT_EQ(hot.strategy, Strategy::kHotSample);
  EXPECT_EQ(hot.blocked_by, BlockReason::kCooldown);
  EXPECT_TRUE(hot.insert_tokens.empty());
  // Canonical inserts know no per-job budget: only the one-token cooldown.
  DecisionContext spent = Free();
  spent.inserts_used = 100;
  spent.last_insert_position = spent.position - 2;
  EXPECT_EQ(Decide(At(6.0f, 0.0f), with_tokens, spent).strategy, Strategy::kInsert);
}

TEST(Decision, InsertCooldownAndBudget) {
  const PolicyConfig config;  // cooldown 16, max_per_job 4.
  DecisionContext c = Free();
  c.last_insert_position = c.position - 16;  // Inserted 16 tokens ago: still cooling down.
  Decision d = Decide(At(6.0f, 0.0f), config, c);
  EXPECT_EQ(d.strategy, Strategy::kHotSample);
  EXPECT_EQ(d.blocked_by, BlockReason::kCooldown);
  EXPECT_EQ(d.blocked_strategy, Strategy::kInsert);
  c.last_insert_position = c.position - 17;
  EXPECT_EQ(Decide(At(6.0f, 0.0f), config, c).strategy, Strategy::kInsert);
  c.inserts_used = 4;
  d = Decide(At(6.0f, 0.0f), config, c);
  EXPECT_EQ(d.strategy, Strategy::kHotSample);
  EXPECT_EQ(d.blocked_by, BlockReason::kBudget);
  c.inserts_used = 3;
  EXPECT_EQ(Decide(At(6.0f, 0.0f), config, c).strategy, Strategy::kInsert);
  PolicyConfig no_cooldown;
  no_cooldown.insert.cooldown = 0;
  c.last_insert_position = c.position - 1;
  EXPECT_EQ(Decide(At(6.0f, 0.0f), no_cooldown, c).strategy, Strategy::kInsert);
}

TEST(Decision, BranchDepth) {
  PolicyConfig config;
  DecisionContext c = Free();
  c.branch_depth = 1;  // max_depth 1: a child may not branch again.
  Decision d = Decide(At(2.0f, 6.0f), config, c);
  EXPECT_EQ(d.strategy, Strategy::kBranchSample);
  EXPECT_EQ(d.blocked_by, BlockReason::kDepth);
  config.branch.max_depth = 2;
  EXPECT_EQ(Decide(At(2.0f, 6.0f), config, c).strategy, Strategy::kBranch);
}

TEST(Decision, SampledTraceDrawsOutsideItsForksAtTheTraceTemperature) {
  PolicyConfig config;
  config.mode = PolicyMode::kTrace;
  config.trace.temperature = 0.6f;
  DecisionContext c = Free();
  c.generated = 0;
  Decision d = Decide(At(0.01f, 0.01f), config, c);
  EXPECT_EQ(d.strategy, Strategy::kBranch);
  EXPECT_EQ(d.fallback, Strategy::kAdaptive);
  EXPECT_FLOAT_EQ(d.sampling.temperature, 0.6f) << "the fork draws its candidates at it";
  c.generated = 5;
  d = Decide(At(0.01f, 0.01f), config, c);
  EXPECT_EQ(d.strategy, Strategy::kAdaptive);
  EXPECT_EQ(d.row, MatrixRow::kAdaptive);
  EXPECT_EQ(d.n_samples, 1);
  EXPECT_FLOAT_EQ(d.sampling.temperature, 0.6f);
  EXPECT_FLOAT_EQ(d.sampling.top_p, config.sampling.top_p);
  // A fork blocked by depth falls back to the draw.
  c.generated = 0;
  c.branch_depth = config.trace.max_depth;
  EXPECT_EQ(Decide(At(0.01f, 0.01f), config, c).strategy, Strategy::kAdaptive);
}

TEST(Decision, TraceForksAtTheFirstTokenAndAboveTheEntropyGateElseArgmax) {
  PolicyConfig config;
  config.mode = PolicyMode::kTrace;
  config.trace.fork_first = true;
  config.trace.fork_entropy = 3.0f;
  DecisionContext c = Free();
  c.generated = 0;
  // Any metrics at the first generated token: CoT-decoding's fork.
  Decision d = Decide(At(0.01f, 0.01f), config, c);
  EXPECT_EQ(d.strategy, Strategy::kBranch);
  EXPECT_EQ(d.fallback, Strategy::kArgmax);
  c.generated = 5;
  // Whatever the matrix would say (row 4 here), TRACE is greedy below the gate...
  EXPECT_EQ(Decide(At(2.99f, 9.0f), config, c).strategy, Strategy::kArgmax);
  EXPECT_EQ(Decide(At(3.0f, 0.0f), config, c).strategy, Strategy::kArgmax) << "strictly above";
  // ...and forks above it, unless nesting is spent; then it stays greedy.
  EXPECT_EQ(Decide(At(3.01f, 0.0f), config, c).strategy, Strategy::kBranch);
  c.branch_depth = config.trace.max_depth;
  d = Decide(At(6.0f, 0.0f), config, c);
  EXPECT_EQ(d.strategy, Strategy::kArgmax);
  EXPECT_EQ(d.blocked_by, BlockReason::kDepth);
  EXPECT_EQ(d.blocked_strategy, Strategy::kBranch);
  // Without fork_first the first token is gated like any other.
  config.trace.fork_first = false;
  c = Free();
  c.generated = 0;
  EXPECT_EQ(Decide(At(1.0f, 0.0f), config, c).strategy, Strategy::kArgmax);
}

TEST(Decision, BackspaceBudgetAndEligibility) {
  const PolicyConfig config;  // max_per_job 8.
  DecisionContext c = Free();
  c.backspaces_used = 7;
  EXPECT_EQ(Decide(At(5.5f, 6.0f), config, c).strategy, Strategy::kBackspace);
  c.backspaces_used = 8;
  Decision d = Decide(At(5.5f, 6.0f), config, c);
  EXPECT_EQ(d.strategy, Strategy::kResample);
  EXPECT_EQ(d.blocked_by, BlockReason::kBudget);
  c.backspaces_used = 0;
  c.previous_backspaceable = false;  // Prompt/inserted token, or already backspaced there.
  d = Decide(At(5.5f, 6.0f), config, c);
  EXPECT_EQ(d.strategy, Strategy::kResample);
  EXPECT_EQ(d.blocked_by, BlockReason::kNotBackspaceable);
  EXPECT_EQ(BlockReasonName(d.blocked_by), "not_backspaceable");
}

TEST(Decision, AdjustedParametersFollowTheCanonicalFormulas) {
  const PolicyConfig config;
  const double t0 = 0.666, top_p = 0.9, top_k = 27, min_p = 0.03;
  for (float attn : {0.0f, 1.5f, 4.0f}) {
    Metrics m = At(0, 0);
    m.attn_entropy = attn;
    m.attn_varentropy = attn / 3;
    m.agreement = attn / 4;
    m.interaction_strength = attn * 0.7f;
    const double ae = m.attn_entropy, av = m.attn_varentropy, agr = m.agreement,
                 is = m.interaction_strength;
    m.entropy = 6.0f;
    m.varentropy = 0.0f;
    Decision d = Decide(m, config, Free());  // HELV
    EXPECT_NEAR(d.sampling.temperature, std::min(1.5, t0 * (1.3 + 0.2 * ae)), 1e-5);
    EXPECT_EQ(d.sampling.top_k, 27);
    m.entropy = 2.0f;
    m.varentropy = 6.0f;
    d = Decide(m, config, Free());  // LEHV
    EXPECT_NEAR(d.sampling.temperature, std::min(1.5, t0 * (1.2 + 0.3 * is)), 1e-5);
    EXPECT_EQ(d.sampling.top_k,
              std::max(5, static_cast<int>(top_k * (1 + 0.5 * (1 - agr)) + 1e-9)));
    m.entropy = 5.5f;
    d = Decide(m, config, Free());  // HEHV
    EXPECT_NEAR(d.sampling.temperature, std::max(2.0, t0 * (2.0 + 0.5 * av)), 1e-5);
    EXPECT_NEAR(d.sampling.top_p, std::max(0.5, top_p - 0.2 * ae), 1e-6);
    m.entropy = 1.0f;
    m.varentropy = 1.5f;
    d = Decide(m, config, Free());  // ADAPTIVE
    const double lu = 2.5, au = ae + av;
    EXPECT_NEAR(d.sampling.temperature, t0 * (1 + 0.3 * lu + 0.2 * au - 0.2 * agr), 1e-5);
    EXPECT_NEAR(d.sampling.top_p, std::clamp(top_p * (1 + 0.1 * av), 0.1, 1.0), 1e-6);
    EXPECT_EQ(d.sampling.top_k,
              std::clamp(std::nearbyint(top_k * (1 + 0.3 * is - 0.2 * agr)), 1.0, 100.0));
    EXPECT_NEAR(d.sampling.min_p, std::clamp(min_p * (1 - 0.5 * lu), 0.01, 0.5), 1e-7);
    EXPECT_EQ(d.n_samples, 5);
  }
  // ARGMAX keeps the base parameters and one sample.
  const Decision argmax = Decide(At(0, 0), config, Free());
  EXPECT_EQ(argmax.n_samples, 1);
  EXPECT_EQ(argmax.sampling.temperature, config.sampling.temperature);
}

TEST(Decision, StructuralStrategiesCarryTheirRowsParameters) {
  const PolicyConfig config;
  const Decision branch = Decide(At(2.0f, 6.0f), config, Free());
  EXPECT_EQ(branch.fallback, Strategy::kBranchSample);
  EXPECT_EQ(branch.sampling.temperature,
            Decide(At(2.0f, 6.0f), Canonical(), Free()).sampling.temperature);
  EXPECT_TRUE(IsStructural(branch.strategy));
  EXPECT_FALSE(IsStructural(branch.fallback));
}

TEST(Decision, TemperatureStaysPositiveWithExtremeCoefficients) {
  PolicyConfig config;
  config.coefficients.ada_temp_agree = 100.0f;
  Metrics m = At(1.0f, 1.0f);
  m.agreement = 2.0f;
  EXPECT_GT(Decide(m, config, Free()).sampling.temperature, 0.0f);
}

TEST(Decision, ConfidenceTerm) {
  const Metrics m = At(1.0f, 2.0f);
  const AdaptiveOptions w;
  const double want =
      0.1 * (1 - 1.0) + 0.2 * (1 - 1.5) + 0.3 * (1 - 2.0) + 0.4 * (1 - 0.4) + 0.5 * 0.3 + 0.6 * 2.0;
  EXPECT_NEAR(ConfidenceTerm(m, w), want, 1e-6);
}

TEST(PolicyConfig, DefaultsAreCanonicalAndValid) {
  const PolicyConfig c;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  EXPECT_EQ(c.mode, PolicyMode::kSearch);
  EXPECT_FLOAT_EQ(c.sampling.temperature, 0.666f);
  EXPECT_EQ(c.sampling.top_k, 27);
  EXPECT_EQ(c.branch.width, 4);
  EXPECT_EQ(c.branch.max_len, 32);
  EXPECT_EQ(c.insert.cooldown, 16);
  EXPECT_EQ(c.insert.max_per_job, 4);
  EXPECT_TRUE(c.insert.tokens.empty());
  EXPECT_EQ(c.backspace.max_per_job, 8);
  EXPECT_EQ(c.adaptive.n_samples, 5);
  EXPECT_EQ(c.attention_mode, AttentionMode::kExact);
  EXPECT_EQ(c.reference_len, 4096);
}

TEST(PolicyConfig, ValidateNamesTheFieldAndRange) {
  struct Case {
    void (*mutate)(PolicyConfig&);
    const char* message;
  };
  const Case cases[] = {
      {[](PolicyConfig& c) { c.branch.width = 1; }, "branch.width: 1 is outside [2, 64]"},
      {[](PolicyConfig& c) { c.sampling.temperature = 0; },
       "sampling.temperature: 0 is outside (0, 10]"},
      {[](PolicyConfig& c) { c.sampling.top_p = 1.5f; }, "sampling.top_p: 1.5 is outside (0, 1]"},
      {[](PolicyConfig& c) { c.sampling.min_p = 1; }, "sampling.min_p: 1 is outside [0, 1)"},
      {[](PolicyConfig& c) { c.sampling.top_k = 0; }, "sampling.top_k: 0 is outside [1, 1024]"},
      {[](PolicyConfig& c) { c.thresholds.hehv_varentropy = NAN; },
       "thresholds.hehv_varentropy: nan is outside [0, 4096]"},
      {[](PolicyConfig& c) { c.coefficients.ada_top_k_is = 1e30f; }, "coefficients.ada_top_k_is"},
      {[](PolicyConfig& c) { c.branch.candidate_min_p = 1; }, "branch.candidate_min_p: 1"},
      {[](PolicyConfig& c) { c.branch.max_depth = 9; }, "branch.max_depth: 9 is outside [1, 8]"},
      {[](PolicyConfig& c) { c.trace.width = 0; }, "trace.width: 0 is outside [1, 64]"},
      {[](PolicyConfig& c) { c.trace.max_traces = 300; }, "trace.max_traces: 300 is outside"},
      {[](PolicyConfig& c) { c.trace.token_budget = -1; }, "trace.token_budget: -1 is outside"},
      {[](PolicyConfig& c) { c.trace.fork_entropy = -1; }, "trace.fork_entropy: -1 is outside"},
      {[](PolicyConfig& c) { c.trace.temperature = 11; }, "trace.temperature: 11 is outside"},
      {[](PolicyConfig& c) { c.trace.warmup_traces = 17; },
       "trace.warmup_traces: 17 is outside [0, 16]"},
      {[](PolicyConfig& c) { c.trace.confidence_window = 0; }, "trace.confidence_window: 0"},
      {[](PolicyConfig& c) { c.trace.keep_fraction = 0; }, "trace.keep_fraction: 0 is outside (0"},
      {[](PolicyConfig& c) { c.trace.answer_pattern = std::string(1025, 'a'); },
       "trace.answer_pattern size: 1025 is outside [0, 1024]"},
      {[](PolicyConfig& c) {
         c.insert.tokens = {5, -1};
       },
       "insert.tokens[1]: -1"},
      {[](PolicyConfig& c) { c.insert.cooldown = -1; }, "insert.cooldown: -1"},
      {[](PolicyConfig& c) { c.backspace.max_per_job = 2000; },
       "backspace.max_per_job: 2000 is outside [0, 1024]"},
      {[](PolicyConfig& c) { c.adaptive.n_samples = 0; }, "adaptive.n_samples: 0"},
      {[](PolicyConfig& c) { c.reference_len = 0; }, "reference_len: 0 is outside [1, 1048576]"},
  };
  for (const Case& c : cases) {
    PolicyConfig config;
    c.mutate(config);
    const absl::Status status = config.Validate();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_NE(status.message().find(c.message), absl::string_view::npos)
        << status << " should contain " << c.message;
  }
}

// Nested rollouts must fit a worker Run: width^max_depth <= kMaxRolloutsInFlight (1024) where
// rollouts nest; beam search and TRACE are bounded otherwise.
TEST(PolicyConfig, NestedRolloutsFitAWorkerRun) {
  PolicyConfig c;
  c.branch.width = 4;
  c.branch.max_depth = 5;  // 1,024: the limit itself.
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  c.branch.max_depth = 6;
  EXPECT_THAT(std::string(c.Validate().message()),
              ::testing::StartsWith("branch.max_depth: width 4 nested 6 deep can run 4096"));
  c.branch.mode = BranchMode::kBeam;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
  c.branch.mode = BranchMode::kRollout;
  c.mode = PolicyMode::kTrace;
  EXPECT_TRUE(c.Validate().ok()) << c.Validate();
}

TEST(PolicyConfig, RowsInFlightAreTheModesWidestAndNothingElse) {
  PolicyConfig c;
  c.mode = PolicyMode::kCanonical;
  c.branch.width = 6;
  EXPECT_EQ(c.RowsInFlight(), 1) << "one path, whatever the branch width";
  c.mode = PolicyMode::kSearch;
  c.branch.max_depth = 3;
  EXPECT_EQ(c.RowsInFlight(), 6) << "the width, not width^depth";
  c.branch.mode = BranchMode::kBeam;
  EXPECT_EQ(c.RowsInFlight(), 6);
  c.mode = PolicyMode::kTrace;
  c.trace.width = 3;
  c.trace.max_traces = 12;
  EXPECT_EQ(c.RowsInFlight(), 12) << "every trace may run at once";
  c.trace.max_traces = 2;
  EXPECT_EQ(c.RowsInFlight(), 3);
}

TEST(Strategy, Names) {
  EXPECT_EQ(StrategyName(Strategy::kArgmax), "ARGMAX");
  EXPECT_EQ(StrategyName(Strategy::kBranchSample), "BRANCH_SAMPLE");
  EXPECT_EQ(StrategyName(Strategy::kForced), "FORCED");
}

}  // namespace
}  // namespace arbor::entropix
