// The engine in-process over a tiny make-model checkpoint: Run semantics (new, fork, continue
// with truncate, append, max_steps 0), every stop reason (low confidence too), top-K, bans,
// reproducibility across batching, Release (also of busy sequences), the KV pool back to baseline,
// and bad input answered with precise statuses while the engine keeps serving.
#include "worker/engine/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "tests/worker/engine/engine_harness.h"
#include "tests/worker/engine/tiny_model_suite.h"

namespace arbor::worker {
namespace {

using testing::DecodeItem;
using testing::LoadEngine;
using testing::MatrixRow;
using testing::Prompt;
using testing::StructuralItem;
using testing::Tokens;
using v1::RunItem;
using v1::RunRequest;
using v1::RunResponse;

class EngineTest : public testing::TinyModelSuite<11> {
 protected:
  void SetUp() override { engine_ = Load(); }

  static std::unique_ptr<Engine> Load(int64_t kv_tokens = 4096, int32_t max_context = 0,
                                      int32_t max_batch_tokens = 512) {
    WorkerSetupOptions options;
    options.model = model_->dir();
    options.kv_tokens = kv_tokens;
    options.max_context = max_context;
    options.max_batch_tokens = max_batch_tokens;
    options.threads = 1;
    absl::StatusOr<std::unique_ptr<Engine>> engine = LoadEngine(options);
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? *std::move(engine) : nullptr;
  }

  absl::StatusOr<RunResponse> RunSync(RunRequest request, std::function<bool()> cancelled = {}) {
    return testing::RunSync(*engine_, std::move(request), std::move(cancelled));
  }
  // A single-item request, returning its one result (or failing the test).
  v1::RunResult RunOne(const RunItem& item) {
    RunRequest request;
    *request.add_items() = item;
    absl::StatusOr<RunResponse> response = RunSync(request);
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok() || response->results_size() != 1) return {};
    return response->results(0);
  }
  int32_t ReleaseSync(std::vector<uint64_t> ids) {
    return testing::ReleaseSync(*engine_, std::move(ids));
  }
  static RunItem Item(uint64_t id, std::vector<int32_t> append, int32_t max_steps,
                      uint64_t seed = 5) {
    return DecodeItem(id, append, max_steps, seed);
  }
  void ExpectError(const RunRequest& request, absl::StatusCode code, const std::string& needle) {
    absl::StatusOr<RunResponse> response = RunSync(request);
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.status().code(), code) << response.status();
    EXPECT_NE(response.status().message().find(needle), std::string::npos) << response.status();
  }

  // A run on a sequence another run holds (sequence 1, live and idle): the holder completes its
  // 4 steps, the intruder fails.
  void ExpectARunOnAHeldSequenceFails() {
    absl::StatusOr<RunResponse> second;
    absl::Notification second_done;
    RunRequest holder;
    *holder.add_items() = Item(1, {}, 4);
    int polls = 0;
    absl::StatusOr<RunResponse> first = RunSync(holder, [&] {
      if (++polls == 1) {
        RunRequest intruder;
        *intruder.add_items() = Item(1, {}, 1);
        engine_->Run(intruder, {}, [&](absl::StatusOr<RunResponse> r) {
          second = std::move(r);
          second_done.Notify();
        });
      }
      return false;
    });
    second_done.WaitForNotification();
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(first->results(0).steps_size(), 4);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition) << second.status();
    EXPECT_NE(second.status().message().find("items[0].sequence_id"), std::string::npos);
  }

  std::unique_ptr<Engine> engine_;
};

TEST_F(EngineTest, PrefillThenDecodeThenAppend) {
  v1::RunResult prefill = RunOne(Item(1, Prompt(10), 0));
  EXPECT_EQ(prefill.stop_reason(), v1::STOP_REASON_MAX_STEPS);
  EXPECT_EQ(prefill.steps_size(), 0);
  EXPECT_EQ(prefill.length(), 10);

  v1::RunResult decode = RunOne(Item(1, {}, 5));
  EXPECT_EQ(decode.stop_reason(), v1::STOP_REASON_MAX_STEPS);
  ASSERT_EQ(decode.steps_size(), 5);
  for (int i = 0; i < 5; ++i) {
    const v1::StepResult& step = decode.steps(i);
    EXPECT_EQ(step.position(), 10 + i);
    EXPECT_GE(step.token_id(), 0);
    EXPECT_LT(step.token_id(), 512);
    EXPECT_LE(step.logprob(), 0.0f);
    EXPECT_GE(step.metrics().entropy(), 0.0f);
    EXPECT_NE(step.strategy(), v1::STRATEGY_UNSPECIFIED);
    EXPECT_GT(step.temperature(), 0.0f);
  }
  EXPECT_EQ(decode.length(), 15);

  v1::RunResult appended = RunOne(Item(1, {3, 4, 5}, 2));
  ASSERT_EQ(appended.steps_size(), 2);
  EXPECT_EQ(appended.steps(0).position(), 18);
  EXPECT_EQ(appended.length(), 20);

  v1::RunResult append_only = RunOne(Item(1, {6}, 0));
  EXPECT_EQ(append_only.steps_size(), 0);
  EXPECT_EQ(append_only.length(), 21);
  EXPECT_EQ(engine_->Health().live_sequences(), 1);
}

TEST_F(EngineTest, ForkAndTruncateRedrawTheSameTokensFromTheSameSeed) {
  const std::vector<int32_t> original = Tokens(RunOne(Item(1, Prompt(10), 6)));
  ASSERT_EQ(original.size(), 6u);

  // The fork shares 10 prompt + 2 sampled tokens; the counter-based sampler keyed by (seed,
  // position, branch) then draws what the parent drew at positions 12..15.
  RunItem fork = Item(2, {}, 4);
  fork.set_fork_from(1);
  fork.set_fork_length(12);
  v1::RunResult forked = RunOne(fork);
  EXPECT_EQ(forked.steps(0).position(), 12);
  EXPECT_EQ(Tokens(forked), std::vector<int32_t>(original.begin() + 2, original.end()));
  EXPECT_EQ(forked.length(), 16);

  // Fork without fork_length takes the parent's whole length (16, the last token pending).
  RunItem whole = Item(3, {}, 0);
  whole.set_fork_from(1);
  EXPECT_EQ(RunOne(whole).length(), 16);

  RunItem truncate = Item(1, {}, 3);
  truncate.set_truncate_to(11);
  v1::RunResult truncated = RunOne(truncate);
  EXPECT_EQ(truncated.steps(0).position(), 11);
  EXPECT_EQ(Tokens(truncated), std::vector<int32_t>(original.begin() + 1, original.begin() + 4));
  EXPECT_EQ(truncated.length(), 14);
}

TEST_F(EngineTest, SameSeedSameTokensAndBatchingChangesNothing) {
  std::vector<std::vector<int32_t>> alone;
  for (uint64_t i = 0; i < 3; ++i) {
    alone.push_back(Tokens(RunOne(Item(10 + i, Prompt(20, i), 12, i))));
  }
  // Again on fresh sequences: the prompts now come from the prefix cache.
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(Tokens(RunOne(Item(20 + i, Prompt(20, i), 12, i))), alone[i]) << i;
  }
  // All three items in one request share every forward step.
  RunRequest together;
  for (uint64_t i = 0; i < 3; ++i) *together.add_items() = Item(30 + i, Prompt(20, i), 12, i);
  absl::StatusOr<RunResponse> response = RunSync(together);
  ASSERT_TRUE(response.ok()) << response.status();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Tokens(response->results(i)), alone[i]) << i;
  EXPECT_EQ(response->timings().forward_steps(), 12);

  // Three concurrent requests merge into shared steps too.
  std::vector<absl::StatusOr<RunResponse>> out(3);
  std::atomic<int> pending = 3;
  absl::Notification all_done;
  for (uint64_t i = 0; i < 3; ++i) {
    RunRequest request;
    *request.add_items() = Item(40 + i, Prompt(20, i), 12, i);
    engine_->Run(request, {}, [&, i](absl::StatusOr<RunResponse> r) {
      out[i] = std::move(r);
      if (--pending == 0) all_done.Notify();
    });
  }
  all_done.WaitForNotification();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(out[i].ok()) << out[i].status();
    EXPECT_EQ(Tokens(out[i]->results(0)), alone[i]) << i;
  }
}

// The per-row metrics and policy run in parallel on the backend's threads: every step (token,
// logprob, metrics, strategy, sampling, top-K) must equal a one-thread engine's, item by item.
TEST_F(EngineTest, ThreadedStepsEqualOneThreadSteps) {
  RunRequest request;
  for (uint64_t i = 0; i < 12; ++i) {
    RunItem item = Item(50 + i, Prompt(24, i), 10, i);
    item.set_top_k_every_step(true);
    *request.add_items() = item;
  }
  absl::StatusOr<RunResponse> one_thread = RunSync(request);
  ASSERT_TRUE(one_thread.ok()) << one_thread.status();
  WorkerSetupOptions options;
  options.model = model_->dir();
  options.threads = 4;
  absl::StatusOr<std::unique_ptr<Engine>> threaded = LoadEngine(options);
  ASSERT_TRUE(threaded.ok()) << threaded.status();
  absl::StatusOr<RunResponse> many_threads = testing::RunSync(**threaded, request);
  ASSERT_TRUE(many_threads.ok()) << many_threads.status();
  ASSERT_EQ(many_threads->results_size(), one_thread->results_size());
  for (int i = 0; i < one_thread->results_size(); ++i) {
    const v1::RunResult& want = one_thread->results(i);
    const v1::RunResult& got = many_threads->results(i);
    ASSERT_EQ(got.steps_size(), want.steps_size()) << i;
    for (int s = 0; s < want.steps_size(); ++s) {
      EXPECT_EQ(got.steps(s).SerializeAsString(), want.steps(s).SerializeAsString())
          << "item " << i << " step " << s;
    }
  }
}

TEST_F(EngineTest, StructuralStopSamplesNothingAndCarriesTopK) {
  RunItem item = StructuralItem(1, 5, MatrixRow::kLehv);  // BRANCH.
  v1::RunResult result = RunOne(item);
  EXPECT_EQ(result.stop_reason(), v1::STOP_REASON_STRUCTURAL);
  ASSERT_EQ(result.steps_size(), 1);
  EXPECT_EQ(result.steps(0).token_id(), -1);
  EXPECT_EQ(result.steps(0).strategy(), v1::STRATEGY_BRANCH);
  ASSERT_EQ(result.steps(0).top_k_size(), 5);
  for (int i = 1; i < 5; ++i) {
    EXPECT_GE(result.steps(0).top_k(i - 1).logprob(), result.steps(0).top_k(i).logprob());
  }
  EXPECT_EQ(result.length(), 8);  // Nothing appended.

  // Without stop_on_structural the same state draws the fallback sample and goes on.
  item.set_sequence_id(2);
  item.set_stop_on_structural(false);
  v1::RunResult fallback = RunOne(item);
  EXPECT_EQ(fallback.stop_reason(), v1::STOP_REASON_MAX_STEPS);
  EXPECT_EQ(fallback.steps(0).strategy(), v1::STRATEGY_BRANCH_SAMPLE);
}

TEST_F(EngineTest, BackspaceStopCarriesThePreviousStepsTopK) {
  // BACKSPACE; the prompt's last token cannot be backspaced, so the first step falls back to a
  // sample and the second stops.
  RunItem item = StructuralItem(1, 6, MatrixRow::kHehv);
  v1::RunResult result = RunOne(item);
  EXPECT_EQ(result.stop_reason(), v1::STOP_REASON_STRUCTURAL);
  ASSERT_EQ(result.steps_size(), 2);
  EXPECT_EQ(result.steps(0).strategy(), v1::STRATEGY_RESAMPLE);
  EXPECT_EQ(result.steps(1).strategy(), v1::STRATEGY_BACKSPACE);
  EXPECT_EQ(result.steps(1).top_k_size(), 6);
  // The removed token's distribution, as a top_k_every_step run reports it.
  ASSERT_EQ(result.steps(0).top_k_size(), 6);
  item.set_sequence_id(2);
  item.set_top_k_every_step(true);
  v1::RunResult every = RunOne(item);
  ASSERT_EQ(every.steps_size(), 2);
  EXPECT_EQ(every.steps(0).SerializeAsString(), result.steps(0).SerializeAsString());

  // Without budget left the worker neither stops nor keeps the top-K of ordinary steps.
  item.set_sequence_id(3);
  item.set_top_k_every_step(false);
  item.mutable_policy()->mutable_backspace()->set_max_per_job(1);
  item.set_backspaces_used(1);
  v1::RunResult spent = RunOne(item);
  EXPECT_EQ(spent.stop_reason(), v1::STOP_REASON_MAX_STEPS);
  ASSERT_EQ(spent.steps_size(), 10);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(spent.steps(i).top_k_size(), 0) << i;
  EXPECT_EQ(spent.steps(9).top_k_size(), 6);
}

TEST_F(EngineTest, StopTokenCalmAndTopKEveryStep) {
  RunItem item = Item(1, Prompt(10), 8);
  item.set_top_k(4);
  item.set_top_k_every_step(true);
  v1::RunResult free = RunOne(item);
  ASSERT_EQ(free.steps_size(), 8);
  for (const v1::StepResult& step : free.steps()) {
    ASSERT_EQ(step.top_k_size(), 4);
    EXPECT_LE(step.logprob(), step.top_k(0).logprob() + 1e-6f);
  }
  const std::vector<int32_t> tokens = Tokens(free);
  const size_t first = std::find(tokens.begin(), tokens.end(), tokens[3]) - tokens.begin();

  RunItem stop = Item(2, Prompt(10), 8);
  stop.set_top_k(4);
  stop.mutable_stop()->add_stop_token_ids(tokens[3]);
  v1::RunResult stopped = RunOne(stop);
  EXPECT_EQ(stopped.stop_reason(), v1::STOP_REASON_STOP_TOKEN);
  ASSERT_EQ(stopped.steps_size(), static_cast<int>(first) + 1);
  EXPECT_EQ(stopped.steps(first).token_id(), tokens[3]);  // The stop token is included.
  EXPECT_EQ(stopped.steps(first).top_k_size(), 4);        // Top-K on the stopping step only.
  EXPECT_EQ(stopped.steps(0).top_k_size(), first == 0 ? 4 : 0);

  RunItem calm = Item(3, Prompt(10), 8);
  calm.set_stop_when_calm(true);
  calm.mutable_policy()->mutable_branch()->set_calm_entropy(64);
  calm.mutable_policy()->mutable_branch()->set_calm_varentropy(4096);
  calm.mutable_policy()->mutable_branch()->set_calm_steps(3);
  v1::RunResult calmed = RunOne(calm);
  EXPECT_EQ(calmed.stop_reason(), v1::STOP_REASON_CALM);
  EXPECT_EQ(calmed.steps_size(), 3);
}

// DeepConf's early stop: the mean token confidence over the last `window` tokens (each the mean
// negative logprob of the step's 20 most likely tokens, recomputed here from the reported top-K)
// stops the item at the first full window below the threshold, and the window spans Runs through
// recent_confidences.
TEST_F(EngineTest, LowConfidenceStopsAtTheFirstFullWindowBelowTheThreshold) {
  constexpr int kWindow = 3;
  RunItem probe = Item(1, Prompt(10), 8);
  probe.set_top_k(20);
  probe.set_top_k_every_step(true);
  const v1::RunResult free = RunOne(probe);
  ASSERT_EQ(free.steps_size(), 8);
  std::vector<double> confidence;
  for (const v1::StepResult& step : free.steps()) {
    double sum = 0.0;
    for (const v1::TokenLogprob& t : step.top_k()) sum -= t.logprob();
    confidence.push_back(sum / step.top_k_size());
  }
  std::vector<double> window_mean(confidence.size(), 0.0);
  for (size_t t = kWindow - 1; t < confidence.size(); ++t) {
    window_mean[t] = (confidence[t] + confidence[t - 1] + confidence[t - 2]) / kWindow;
  }
  const auto [lo, hi] = std::minmax_element(window_mean.begin() + kWindow - 1, window_mean.end());
  auto stopped_at = [&](uint64_t id, double threshold, std::vector<float> recent = {}) {
    RunItem item = Item(id, Prompt(10), 8);
    item.set_stop_below_confidence(static_cast<float>(threshold));
    item.set_confidence_window(kWindow);
    for (float c : recent) item.add_recent_confidences(c);
    return RunOne(item);
  };
  const v1::RunResult never = stopped_at(2, *lo - 1e-3);
  EXPECT_EQ(never.stop_reason(), v1::STOP_REASON_MAX_STEPS);
  EXPECT_EQ(Tokens(never), Tokens(free)) << "the stop changes no draw";
  const v1::RunResult first = stopped_at(3, *hi + 1e-3);
  EXPECT_EQ(first.stop_reason(), v1::STOP_REASON_LOW_CONFIDENCE);
  EXPECT_EQ(first.steps_size(), kWindow) << "not before the window is full";
  const double middle = (*lo + *hi) / 2;
  const size_t crossing = std::find_if(window_mean.begin() + kWindow - 1, window_mean.end(),
                                       [middle](double m) { return m < middle; }) -
                          window_mean.begin();
  const v1::RunResult mid = stopped_at(4, middle);
  EXPECT_EQ(mid.stop_reason(), v1::STOP_REASON_LOW_CONFIDENCE);
  EXPECT_EQ(mid.steps_size(), static_cast<int>(crossing) + 1);
  // Two earlier tokens of confidence 0 fill the window: the first token decides.
  const v1::RunResult carried = stopped_at(5, confidence[0] / kWindow + 1e-3, {0.0f, 0.0f});
  EXPECT_EQ(carried.stop_reason(), v1::STOP_REASON_LOW_CONFIDENCE);
  EXPECT_EQ(carried.steps_size(), 1);
}

TEST_F(EngineTest, ContextLimitStopsAndRefusesOversizedAppends) {
  engine_ = Load(4096, /*max_context=*/16);
  v1::RunResult result = RunOne(Item(1, Prompt(13), 10));
  EXPECT_EQ(result.stop_reason(), v1::STOP_REASON_CONTEXT);
  EXPECT_EQ(result.steps_size(), 3);
  EXPECT_EQ(result.length(), 16);
  // Already at the context: stops before any step.
  v1::RunResult full = RunOne(Item(1, {}, 10));
  EXPECT_EQ(full.stop_reason(), v1::STOP_REASON_CONTEXT);
  EXPECT_EQ(full.steps_size(), 0);

  RunRequest too_long;
  *too_long.add_items() = Item(2, Prompt(17), 1);
  ExpectError(too_long, absl::StatusCode::kInvalidArgument, "items[0].append");
  RunRequest grows_past;
  *grows_past.add_items() = Item(1, {1}, 1);
  ExpectError(grows_past, absl::StatusCode::kInvalidArgument, "items[0].append");
}

TEST_F(EngineTest, CancelledStopsWithinOneStep) {
  int polls = 0;
  RunRequest request;
  *request.add_items() = Item(1, Prompt(10), 100);
  // The first poll is at admission, then one before each step.
  absl::StatusOr<RunResponse> response = RunSync(request, [&] { return ++polls > 5; });
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->results(0).stop_reason(), v1::STOP_REASON_CANCELLED);
  EXPECT_EQ(response->results(0).steps_size(), 4);
  EXPECT_EQ(response->results(0).length(), 14);
}

TEST_F(EngineTest, RunCancelledBeforeAdmissionCreatesNothing) {
  RunRequest request;
  *request.add_items() = Item(1, Prompt(10), 100);
  absl::StatusOr<RunResponse> response = RunSync(request, [] { return true; });
  EXPECT_EQ(response.status().code(), absl::StatusCode::kCancelled) << response.status();
  EXPECT_EQ(engine_->Health().live_sequences(), 0);
  EXPECT_EQ(engine_->Health().cache().used_blocks(), 0);
  EXPECT_EQ(ReleaseSync({1}), 0) << "the sequence was never created";
}

TEST_F(EngineTest, KvExhaustionEndsDecodeAndRefusesPrefillWithNothingWritten) {
  engine_ = Load(/*kv_tokens=*/32);
  v1::RunResult result = RunOne(Item(1, Prompt(20), 100));
  EXPECT_EQ(result.stop_reason(), v1::STOP_REASON_KV_EXHAUSTED);
  // Positions 20..31 get KV, so the samples at 20..32 are valid.
  EXPECT_EQ(result.steps_size(), 13);
  EXPECT_EQ(result.length(), 33);
  // Continuing needs a block for position 32.
  RunRequest more;
  *more.add_items() = Item(1, {}, 1);
  ExpectError(more, absl::StatusCode::kResourceExhausted, "");
  EXPECT_EQ(ReleaseSync({1}), 1);

  // A prompt that cannot fit, prefilled in chunks: refused, and the pool is as before.
  engine_ = Load(/*kv_tokens=*/32, 0, /*max_batch_tokens=*/16);
  RunRequest big;
  *big.add_items() = Item(2, Prompt(40), 1);
  ExpectError(big, absl::StatusCode::kResourceExhausted, "");
  EXPECT_EQ(engine_->Health().live_sequences(), 0);
  EXPECT_EQ(engine_->Health().cache().used_blocks(), 0);
  // The engine still serves.
  EXPECT_EQ(RunOne(Item(3, Prompt(8), 2)).steps_size(), 2);
  const int64_t used = engine_->Health().cache().used_blocks();
  // A continued sequence whose append overflows mid-prefill returns to its length before.
  RunRequest overflow;
  *overflow.add_items() = Item(3, Prompt(40), 1);
  ExpectError(overflow, absl::StatusCode::kResourceExhausted, "");
  EXPECT_EQ(RunOne(Item(3, {}, 0)).length(), 10);
  EXPECT_EQ(engine_->Health().cache().used_blocks(), used);
}

TEST_F(EngineTest, ReleaseSentAfterARunAppliesAfterIt) {
  for (uint64_t id = 60; id < 70; ++id) {
    RunRequest request;
    *request.add_items() = Item(id, Prompt(5), 1);
    absl::Notification ran;
    engine_->Run(request, {}, [&](absl::StatusOr<RunResponse> r) {
      EXPECT_TRUE(r.ok()) << r.status();
      ran.Notify();
    });
    EXPECT_EQ(ReleaseSync({id}), 1);
    ran.WaitForNotification();
  }
  EXPECT_EQ(engine_->Health().live_sequences(), 0);
}

TEST_F(EngineTest, BannedTokensAreNeverSampled) {
  RunItem item = Item(1, Prompt(10), 12);
  for (int32_t position = 10; position < 22; ++position) {
    for (int32_t token = 0; token < 256; ++token) {
      v1::TokenBan* ban = item.add_bans();
      ban->set_position(position);
      ban->set_token_id(token);
    }
  }
  v1::RunResult result = RunOne(item);
  ASSERT_EQ(result.steps_size(), 12);
  for (int32_t token : Tokens(result)) EXPECT_GE(token, 256);
}

TEST_F(EngineTest, ReleaseDefersBusySequencesAndThePoolReturnsToBaseline) {
  const v1::CacheStats baseline = engine_->Health().cache();
  EXPECT_EQ(baseline.used_blocks(), 0);
  RunOne(Item(1, Prompt(40), 3));
  RunItem fork = Item(2, {}, 3);
  fork.set_fork_from(1);
  fork.set_fork_length(37);
  RunOne(fork);
  EXPECT_GT(engine_->Health().cache().used_blocks(), 0);

  // Release sequence 3 while its run is in progress: the run completes, then it goes.
  int32_t released_while_busy = -1;
  int polls = 0;
  RunRequest busy;
  *busy.add_items() = Item(3, Prompt(20), 6);
  absl::StatusOr<RunResponse> response = RunSync(busy, [&] {
    if (++polls == 2) engine_->Release({3}, [&](int32_t n) { released_while_busy = n; });
    return false;
  });
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->results(0).steps_size(), 6);
  EXPECT_EQ(released_while_busy, 1);
  EXPECT_EQ(engine_->Health().live_sequences(), 2);

  EXPECT_EQ(ReleaseSync({1, 2, 99}), 2);
  EXPECT_EQ(ReleaseSync({1}), 0);  // Idempotent.
  const v1::HealthResponse health = engine_->Health();
  EXPECT_EQ(health.live_sequences(), 0);
  EXPECT_EQ(health.active_runs(), 0);
  EXPECT_EQ(health.cache().used_blocks(), 0);
  EXPECT_EQ(health.cache().cached_blocks() + health.cache().free_blocks(), baseline.total_blocks());
}

TEST_F(EngineTest, BadInputGetsPreciseStatusesAndTheEngineKeepsServing) {
  RunOne(Item(1, Prompt(10), 2));

  RunItem unknown = Item(50, {}, 1);
  unknown.set_truncate_to(3);
  RunRequest r1;
  *r1.add_items() = unknown;
  ExpectError(r1, absl::StatusCode::kNotFound, "items[0].sequence_id");

  RunItem orphan = Item(51, {}, 1);
  orphan.set_fork_from(777);
  RunRequest r2;
  *r2.add_items() = orphan;
  ExpectError(r2, absl::StatusCode::kNotFound, "items[0].fork_from");

  RunRequest duplicate;
  *duplicate.add_items() = Item(5, Prompt(3), 1);
  *duplicate.add_items() = Item(5, Prompt(3), 1);
  ExpectError(duplicate, absl::StatusCode::kInvalidArgument, "items[1].sequence_id");

  RunRequest r3;
  *r3.add_items() = Item(6, Prompt(3), 1);
  RunItem fork_onto_live = Item(1, {}, 1);
  fork_onto_live.set_fork_from(6);
  *r3.add_items() = fork_onto_live;
  ExpectError(r3, absl::StatusCode::kAlreadyExists, "items[1].sequence_id");

  RunItem beyond = Item(7, {}, 1);
  beyond.set_fork_from(1);
  beyond.set_fork_length(13);
  RunRequest r4;
  *r4.add_items() = beyond;
  ExpectError(r4, absl::StatusCode::kInvalidArgument, "items[0].fork_length");

  RunRequest vocab;
  *vocab.add_items() = Item(8, {1, 2, 3, 512}, 1);
  ExpectError(vocab, absl::StatusCode::kInvalidArgument, "items[0].append[3]");
  RunRequest negative;
  *negative.add_items() = Item(8, {-1}, 1);
  ExpectError(negative, absl::StatusCode::kInvalidArgument, "items[0].append[0]");

  RunItem policy = Item(9, Prompt(3), 1);
  policy.mutable_policy()->mutable_sampling()->set_temperature(-1);
  RunRequest r5;
  *r5.add_items() = policy;
  ExpectError(r5, absl::StatusCode::kInvalidArgument, "items[0].policy.sampling.temperature");

  RunItem no_window = Item(9, Prompt(3), 1);
  no_window.set_stop_below_confidence(2.0f);
  RunRequest r6;
  *r6.add_items() = no_window;
  ExpectError(r6, absl::StatusCode::kInvalidArgument, "items[0].confidence_window");
  RunItem long_memory = no_window;
  long_memory.set_confidence_window(2);
  long_memory.add_recent_confidences(1.0f);
  long_memory.add_recent_confidences(1.0f);
  RunRequest r7;
  *r7.add_items() = long_memory;
  ExpectError(r7, absl::StatusCode::kInvalidArgument, "items[0].recent_confidences size");
  RunItem not_a_number = Item(9, Prompt(3), 1);
  not_a_number.set_stop_below_confidence(std::nanf(""));
  RunRequest r8;
  *r8.add_items() = not_a_number;
  ExpectError(r8, absl::StatusCode::kInvalidArgument, "items[0].stop_below_confidence");

  RunRequest empty;
  ExpectError(empty, absl::StatusCode::kInvalidArgument, "items");
  RunRequest nothing_to_decode;
  *nothing_to_decode.add_items() = Item(10, {}, 1);
  ExpectError(nothing_to_decode, absl::StatusCode::kInvalidArgument, "items[0].append");

  ASSERT_NO_FATAL_FAILURE(ExpectARunOnAHeldSequenceFails());

  // None of the failures left a sequence behind or changed sequence 1 (10 + 2 + 4 tokens).
  EXPECT_EQ(engine_->Health().live_sequences(), 1);
  EXPECT_EQ(RunOne(Item(1, {}, 1)).length(), 17);
}

}  // namespace
}  // namespace arbor::worker
