// Teacher-forced scoring (RunItem.score_tokens) and prefill-only items (max_steps 0) in the
// engine over a tiny make-model checkpoint: a scored step reports exactly what a decode step at
// that position reports (same distribution, same metrics), whatever the batch budget splits;
// scoring continues into decoding; scoring re-opens a cached token when it must; prefill-only
// items run their tokens; an unset last_insert_position does not block INSERT; bad scoring
// requests get precise statuses. The numbers themselves are checked against a float64 forward
// in engine_reference_test.cc.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/worker/engine/engine_harness.h"
#include "tests/worker/engine/tiny_model_suite.h"
#include "worker/engine/engine.h"

namespace arbor::worker {
namespace {

using testing::DecodeItem;
using testing::Prompt;
using testing::Tokens;
using v1::RunItem;
using v1::RunRequest;
using v1::RunResponse;
using v1::RunResult;

class EngineScoringTest : public testing::TinyModelSuite<12> {
 protected:
  void SetUp() override { engine_ = Load(512); }

  static std::unique_ptr<Engine> Load(int32_t max_batch_tokens) {
    WorkerSetupOptions options;
    options.model = model_->dir();
    options.kv_tokens = 4096;
    options.max_batch_tokens = max_batch_tokens;
    options.threads = 1;
    absl::StatusOr<std::unique_ptr<Engine>> engine = testing::LoadEngine(options);
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? *std::move(engine) : nullptr;
  }

  absl::StatusOr<RunResponse> Run(const std::vector<RunItem>& items) {
    RunRequest request;
    for (const RunItem& item : items) *request.add_items() = item;
    return testing::RunSync(*engine_, request);
  }
  RunResult RunOne(const RunItem& item) {
    absl::StatusOr<RunResponse> response = Run({item});
    EXPECT_TRUE(response.ok()) << response.status();
    return response.ok() ? response->results(0) : RunResult();
  }
  // Scores the last `scored` tokens of `append` on a new sequence `id`.
  static RunItem ScoreItem(uint64_t id, const std::vector<int32_t>& append, int32_t scored,
                           int32_t max_steps = 0) {
    RunItem item = DecodeItem(id, append, max_steps);
    item.set_score_tokens(scored);
    item.set_top_k(4);
    return item;
  }
  int64_t ComputedTokens() const { return engine_->Health().cache().miss_tokens(); }

  std::unique_ptr<Engine> engine_;
};

void ExpectSameDistribution(const v1::StepResult& scored, const v1::StepResult& decoded) {
  EXPECT_EQ(scored.position(), decoded.position());
  EXPECT_EQ(scored.token_id(), decoded.token_id());
  EXPECT_NEAR(scored.logprob(), decoded.logprob(), 1e-4);
  EXPECT_NEAR(scored.metrics().entropy(), decoded.metrics().entropy(), 1e-4);
  EXPECT_NEAR(scored.metrics().varentropy(), decoded.metrics().varentropy(), 1e-3);
  EXPECT_NEAR(scored.metrics().attn_entropy(), decoded.metrics().attn_entropy(), 1e-4);
  EXPECT_NEAR(scored.metrics().agreement(), decoded.metrics().agreement(), 1e-5);
  EXPECT_NEAR(scored.metrics().interaction_strength(), decoded.metrics().interaction_strength(),
              1e-4);
  EXPECT_GE(scored.rank(), 1);
  ASSERT_EQ(scored.top_k_size(), 4);
  // The top-K is sorted and the scored token's rank agrees with it.
  for (int k = 0; k + 1 < scored.top_k_size(); ++k) {
    EXPECT_GE(scored.top_k(k).logprob(), scored.top_k(k + 1).logprob());
  }
  for (int k = 0; k < scored.top_k_size(); ++k) {
    if (scored.top_k(k).token_id() == scored.token_id()) {
      EXPECT_EQ(scored.rank(), k + 1);
    }
  }
  if (scored.rank() > scored.top_k_size()) {
    EXPECT_LE(scored.logprob(), scored.top_k(3).logprob());
  }
}

TEST_F(EngineScoringTest, ScoredStepsReportWhatDecodeStepsReport) {
  const std::vector<int32_t> prompt = Prompt(21, 4);
  const RunResult decoded = RunOne(DecodeItem(1, prompt, 9));
  ASSERT_EQ(decoded.steps_size(), 9);
  std::vector<int32_t> all = prompt;
  for (int32_t token : Tokens(decoded)) all.push_back(token);

  const RunResult scored = RunOne(ScoreItem(2, all, 9));
  EXPECT_EQ(scored.stop_reason(), v1::STOP_REASON_MAX_STEPS);
  EXPECT_EQ(scored.length(), static_cast<int>(all.size()));
  ASSERT_EQ(scored.steps_size(), 9);
  for (int i = 0; i < 9; ++i) {
    SCOPED_TRACE(i);
    ExpectSameDistribution(scored.steps(i), decoded.steps(i));
    EXPECT_NE(scored.steps(i).strategy(), v1::STRATEGY_UNSPECIFIED);
  }
}

TEST_F(EngineScoringTest, BudgetSplitsAndBatchingChangeNothing) {
  const std::vector<int32_t> a = Prompt(40, 8), b = Prompt(12, 30);
  const RunResult alone = RunOne(ScoreItem(1, a, 30));
  ASSERT_EQ(alone.steps_size(), 30);
  // A 7-token budget splits the plain prefill and the scoring rows over many steps, and two
  // items share them.
  engine_ = Load(7);
  absl::StatusOr<RunResponse> together = Run({ScoreItem(1, a, 30), ScoreItem(2, b, 5)});
  ASSERT_TRUE(together.ok()) << together.status();
  ASSERT_EQ(together->results(0).steps_size(), 30);
  EXPECT_EQ(together->results(1).steps_size(), 5);
  for (int i = 0; i < 30; ++i) {
    SCOPED_TRACE(i);
    ExpectSameDistribution(together->results(0).steps(i), alone.steps(i));
    EXPECT_EQ(together->results(0).steps(i).rank(), alone.steps(i).rank());
  }
}

TEST_F(EngineScoringTest, ScoringThenDecodingEqualsDecodingAfterThePrefill) {
  const std::vector<int32_t> prompt = Prompt(18, 2);
  const RunResult plain = RunOne(DecodeItem(1, prompt, 4));
  const RunResult both = RunOne(ScoreItem(2, prompt, 5, /*max_steps=*/4));
  ASSERT_EQ(both.steps_size(), 9);
  EXPECT_EQ(both.steps(4).position(), 17);
  EXPECT_GT(both.steps(4).rank(), 0);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(both.steps(5 + i).token_id(), plain.steps(i).token_id()) << i;
    EXPECT_EQ(both.steps(5 + i).rank(), 0) << "decoded steps carry no rank";
  }
  EXPECT_EQ(both.length(), 22);
}

TEST_F(EngineScoringTest, ScoringAfterACachedTokenReopensIt) {
  const std::vector<int32_t> prompt = Prompt(20, 6);
  const RunResult decoded = RunOne(DecodeItem(1, prompt, 3));
  // Truncating leaves every kept token cached, none pending: the first scored token needs the
  // distribution after the last cached one.
  RunItem item = ScoreItem(1, {decoded.steps(0).token_id(), decoded.steps(1).token_id()}, 2);
  item.set_truncate_to(20);
  const RunResult scored = RunOne(item);
  ASSERT_EQ(scored.steps_size(), 2);
  ExpectSameDistribution(scored.steps(0), decoded.steps(0));
  ExpectSameDistribution(scored.steps(1), decoded.steps(1));
}

TEST_F(EngineScoringTest, PrefillOnlyRunsAllButTheLastToken) {
  const int64_t before = ComputedTokens();
  const RunResult prefill = RunOne(DecodeItem(1, Prompt(33, 1), 0));
  EXPECT_EQ(prefill.stop_reason(), v1::STOP_REASON_MAX_STEPS);
  EXPECT_EQ(prefill.length(), 33);
  EXPECT_EQ(ComputedTokens() - before, 32);
  // A fork of it finds those tokens computed: its decode runs only the last one.
  RunItem fork = DecodeItem(2, {}, 1);
  fork.set_fork_from(1);
  const RunResult forked = RunOne(fork);
  EXPECT_EQ(forked.steps_size(), 1);
  EXPECT_EQ(ComputedTokens() - before, 33);
  // A one-token append has nothing to run before its last token.
  RunOne(DecodeItem(1, {5}, 0));
  EXPECT_EQ(ComputedTokens() - before, 34);
}

TEST_F(EngineScoringTest, UnsetLastInsertPositionDoesNotBlockInsert) {
  // Thresholds that put every state in the HELV row (INSERT) on an early position.
  RunItem item = DecodeItem(1, Prompt(3), 1);
  item.set_stop_on_structural(true);
  v1::Thresholds* t = item.mutable_policy()->mutable_thresholds();
  t->set_lelv_entropy(0);
  t->set_helv_entropy(0);
  t->set_helv_varentropy(4096);
  EXPECT_EQ(RunOne(item).steps(0).strategy(), v1::STRATEGY_INSERT);
  // Set, it applies the cooldown.
  RunItem cooling = DecodeItem(2, Prompt(3), 1);
  *cooling.mutable_policy() = item.policy();
  cooling.set_stop_on_structural(true);
  cooling.set_last_insert_position(1);
  EXPECT_EQ(RunOne(cooling).steps(0).strategy(), v1::STRATEGY_HOT_SAMPLE);
}

TEST_F(EngineScoringTest, BadScoringRequestsGetPreciseStatuses) {
  auto expect_error = [&](const RunItem& item, absl::StatusCode code, const std::string& needle) {
    absl::StatusOr<RunResponse> response = Run({item});
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.status().code(), code) << response.status();
    EXPECT_NE(response.status().message().find(needle), std::string::npos) << response.status();
  };
  expect_error(ScoreItem(1, Prompt(3), 4), absl::StatusCode::kInvalidArgument,
               "items[0].score_tokens");
  expect_error(ScoreItem(1, Prompt(3), 3), absl::StatusCode::kInvalidArgument,
               "needs a token before it");
  RunItem negative = ScoreItem(1, Prompt(3), 1);
  negative.set_last_insert_position(-1);
  expect_error(negative, absl::StatusCode::kInvalidArgument, "items[0].last_insert_position");
  // The engine keeps serving.
  EXPECT_EQ(RunOne(ScoreItem(1, Prompt(3), 2)).steps_size(), 2);
}

}  // namespace
}  // namespace arbor::worker
