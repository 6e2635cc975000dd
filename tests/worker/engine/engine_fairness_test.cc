// Jobs sharing the engine's steps (EngineOptions::shared_step_rows and shared_step_tokens): a
// narrow job queued together with a wide one — a wide prefill, or many decoding items — has rows
// in every step from its first to its last, the steps it shares hold no more than the shared
// rows and tokens, the wide job then has whole steps to itself and completes, and every token
// equals a solo run's. A crowd of jobs gets shared_rows_per_job rows of each a step. Alone, a
// job's steps hold at most max_step_rows rows, to the same tokens; a job left alone keeps the
// shared steps' bounds for share_linger after the last step it shared.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "tests/worker/engine/engine_harness.h"
#include "tests/worker/engine/forwarding_backend.h"
#include "tests/worker/engine/tiny_model_suite.h"
#include "worker/engine/engine.h"

namespace arbor::worker {
namespace {

using testing::DecodeItem;
using testing::Prompt;
using testing::Tokens;

constexpr int32_t kMaxBatchTokens = 64;
constexpr int32_t kSharedStepRows = 4;
constexpr int32_t kSharedStepTokens = 16;

// Holds the first forward step until opened, and records the rows and tokens of every step.
class GatedBackend : public testing::ForwardingBackend {
 public:
  struct Gate {
    absl::Notification entered;  // The first step began.
    absl::Notification open;
    absl::Mutex mu;
    std::vector<int32_t> step_tokens ABSL_GUARDED_BY(mu);
    std::vector<size_t> step_rows ABSL_GUARDED_BY(mu);
  };
  GatedBackend(std::unique_ptr<Backend> inner, Gate* gate)
      : ForwardingBackend(std::move(inner)), gate_(gate) {}

  absl::Status Forward(std::span<const ForwardRow> rows, const TensorTap& tap) override {
    if (!gate_->entered.HasBeenNotified()) gate_->entered.Notify();
    gate_->open.WaitForNotification();
    int32_t tokens = 0;
    for (const ForwardRow& row : rows) tokens += static_cast<int32_t>(row.tokens.size());
    {
      absl::MutexLock lock(&gate_->mu);
      gate_->step_tokens.push_back(tokens);
      gate_->step_rows.push_back(rows.size());
    }
    return ForwardingBackend::Forward(rows, tap);
  }

 private:
  Gate* gate_;
};

// A wide job of `items` items on `prompt`-token prompts decoding `steps` steps each.
v1::RunRequest Wide(int items, int prompt, int32_t steps) {
  v1::RunRequest request;
  request.set_job_id("wide");
  for (int i = 0; i < items; ++i) {
    *request.add_items() = DecodeItem(100 + i, Prompt(prompt, i), steps, i);
  }
  return request;
}

v1::RunRequest Narrow(int32_t steps) {
  v1::RunRequest request;
  request.set_job_id("narrow");
  *request.add_items() = DecodeItem(1, Prompt(6, 99), steps, 42);
  return request;
}

class EngineFairnessTest : public testing::TinyModelSuite<17> {
 protected:
  // `max_step_rows` 0: a lone job's steps unbounded, as the shared steps are what is tested;
  // `share_linger` zero: a job left alone widens its steps at once.
  std::unique_ptr<Engine> Load(GatedBackend::Gate* gate, int32_t max_step_rows = 0,
                               absl::Duration share_linger = absl::ZeroDuration()) {
    WorkerSetupOptions options;
    options.model = model_->dir();
    options.kv_tokens = 8192;
    options.max_batch_tokens = kMaxBatchTokens;
    options.shared_step_rows = kSharedStepRows;
    options.shared_step_tokens = kSharedStepTokens;
    options.max_step_rows = max_step_rows;
    options.share_linger = share_linger;
    options.threads = 1;
    if (gate != nullptr) {
      options.wrap_backend = [gate](std::unique_ptr<Backend> inner) {
        return std::make_unique<GatedBackend>(std::move(inner), gate);
      };
    }
    absl::StatusOr<std::unique_ptr<Engine>> engine = testing::LoadEngine(options);
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? *std::move(engine) : nullptr;
  }

  // Runs `wide` and `narrow` queued together (behind a gated first step of a third job) and
  // checks the narrow job's steps against the wide one's, and both results against solo runs.
  // Once the narrow job is done, the wide one's steps are whole at once (`share_linger` zero),
  // or keep the shared steps' bounds to its end (a linger longer than the test).
  void ExpectNarrowRunsInEveryStep(const v1::RunRequest& wide, const v1::RunRequest& narrow,
                                   absl::Duration share_linger = absl::ZeroDuration()) {
    std::unique_ptr<Engine> solo = Load(nullptr);
    absl::StatusOr<v1::RunResponse> wide_alone = testing::RunSync(*solo, wide);
    absl::StatusOr<v1::RunResponse> narrow_alone = testing::RunSync(*solo, narrow);
    ASSERT_TRUE(wide_alone.ok() && narrow_alone.ok());

    GatedBackend::Gate gate;
    std::unique_ptr<Engine> engine = Load(&gate, /*max_step_rows=*/0, share_linger);
    v1::RunRequest opener;
    opener.set_job_id("opener");
    *opener.add_items() = DecodeItem(2, Prompt(4, 5), 1);
    std::vector<absl::StatusOr<v1::RunResponse>> out(3);
    std::atomic<int> pending = 3;
    absl::Notification all_done;
    size_t steps_at_narrow_done = 0;
    auto submit = [&](const v1::RunRequest& request, int slot) {
      engine->Run(request, {}, [&, slot](absl::StatusOr<v1::RunResponse> response) {
        if (slot == 2) {
          absl::MutexLock lock(&gate.mu);
          steps_at_narrow_done = gate.step_tokens.size();
        }
        out[slot] = std::move(response);
        if (--pending == 0) all_done.Notify();
      });
    };
    submit(opener, 0);
    gate.entered.WaitForNotification();  // Both are admitted at once, after the opener's step.
    submit(wide, 1);
    submit(narrow, 2);
    gate.open.Notify();
    all_done.WaitForNotification();
    for (const auto& response : out) ASSERT_TRUE(response.ok()) << response.status();

    absl::MutexLock lock(&gate.mu);
    const int32_t narrow_steps = narrow.items(0).max_steps();
    EXPECT_EQ(steps_at_narrow_done, 1 + narrow_steps) << "steps the narrow job waited through";
    for (size_t s = 1; s < steps_at_narrow_done; ++s) {
      EXPECT_LE(gate.step_tokens[s], kSharedStepTokens) << "shared step " << s;
      EXPECT_LE(gate.step_rows[s], kSharedStepRows) << "shared step " << s;
    }
    ASSERT_GT(gate.step_tokens.size(), steps_at_narrow_done) << "the wide job outlasts it";
    if (share_linger == absl::ZeroDuration()) {
      EXPECT_GT(gate.step_tokens[steps_at_narrow_done], kSharedStepTokens) << "alone: whole steps";
    } else {
      for (size_t s = steps_at_narrow_done; s < gate.step_rows.size(); ++s) {
        EXPECT_LE(gate.step_tokens[s], kSharedStepTokens) << "lingering step " << s;
        EXPECT_LE(gate.step_rows[s], kSharedStepRows) << "lingering step " << s;
      }
    }
    EXPECT_EQ(Tokens(out[2]->results(0)), Tokens(narrow_alone->results(0)));
    ASSERT_EQ(out[1]->results_size(), wide.items_size());
    for (int i = 0; i < wide.items_size(); ++i) {
      EXPECT_EQ(Tokens(out[1]->results(i)), Tokens(wide_alone->results(i))) << "item " << i;
    }
  }
};

// 16 items of 40-token prompts: 640 tokens of prefill, ten whole steps, ahead of the narrow
// job's first token unless the steps are shared.
TEST_F(EngineFairnessTest, ANarrowJobIsNotQueuedBehindAWidePrefill) {
  ExpectNarrowRunsInEveryStep(Wide(16, 40, 3), Narrow(8));
}

// 40 items decoding: 40 rows in every step the narrow job shares unless the steps are shared.
TEST_F(EngineFairnessTest, AWideDecodeSpreadsOverStepsBesideANarrowJob) {
  ExpectNarrowRunsInEveryStep(Wide(40, 1, 12), Narrow(8));
}

// Left alone within the linger, the wide job keeps the shared steps' bounds, so a request
// arriving next waits for a short step; its tokens are still a solo run's.
TEST_F(EngineFairnessTest, AWideJobJustLeftAloneKeepsSharedSteps) {
  ExpectNarrowRunsInEveryStep(Wide(40, 1, 12), Narrow(8), absl::Hours(1));
}

// Four jobs of three traces each, queued together: a shared step holds two rows per job
// (shared_rows_per_job) rather than shared_step_rows, so every job runs two of its traces a
// step (a job's items in order), and each trace's tokens equal a solo run's.
TEST_F(EngineFairnessTest, ACrowdOfJobsRunsTwoRowsOfEachAStep) {
  constexpr int kJobs = 4, kTraces = 3, kSteps = 6;
  std::vector<v1::RunRequest> crowd(kJobs);
  for (int j = 0; j < kJobs; ++j) {
    crowd[j].set_job_id(absl::StrCat("job", j));
    for (int t = 0; t < kTraces; ++t) {
      const int i = j * kTraces + t;
      *crowd[j].add_items() = DecodeItem(100 + i, Prompt(1, i), kSteps, i);
    }
  }
  std::unique_ptr<Engine> solo = Load(nullptr);
  std::vector<absl::StatusOr<v1::RunResponse>> alone;
  for (const v1::RunRequest& job : crowd) alone.push_back(testing::RunSync(*solo, job));

  GatedBackend::Gate gate;
  std::unique_ptr<Engine> engine = Load(&gate);
  v1::RunRequest opener;
  opener.set_job_id("opener");
  *opener.add_items() = DecodeItem(2, Prompt(4, 5), 1);
  std::vector<absl::StatusOr<v1::RunResponse>> out(kJobs + 1);
  std::atomic<int> pending = kJobs + 1;
  absl::Notification all_done;
  auto submit = [&](const v1::RunRequest& request, int slot) {
    engine->Run(request, {}, [&, slot](absl::StatusOr<v1::RunResponse> response) {
      out[slot] = std::move(response);
      if (--pending == 0) all_done.Notify();
    });
  };
  submit(opener, kJobs);
  gate.entered.WaitForNotification();  // The crowd is admitted at once, after the opener's step.
  for (int j = 0; j < kJobs; ++j) submit(crowd[j], j);
  gate.open.Notify();
  all_done.WaitForNotification();

  absl::MutexLock lock(&gate.mu);
  const std::vector<size_t> crowded(gate.step_rows.begin() + 1, gate.step_rows.end());
  // Two traces of each job a step, not shared_step_rows (4) rows in all; then the third.
  std::vector<size_t> expected(kSteps, 2 * kJobs);
  expected.insert(expected.end(), kSteps, kJobs);
  EXPECT_EQ(crowded, expected);
  for (int j = 0; j < kJobs; ++j) {
    ASSERT_TRUE(out[j].ok() && alone[j].ok()) << "job " << j;
    for (int t = 0; t < kTraces; ++t) {
      EXPECT_EQ(Tokens(out[j]->results(t)), Tokens(alone[j]->results(t))) << j << "/" << t;
    }
  }
}

// A lone job's steps hold at most max_step_rows rows, so that a job arriving beside it waits
// for a short step; the rows past the bound run in the next steps, to the same tokens.
TEST_F(EngineFairnessTest, ALoneWideJobsStepsAreBounded) {
  const v1::RunRequest wide = Wide(40, 1, 6);
  std::unique_ptr<Engine> unbounded = Load(nullptr);
  absl::StatusOr<v1::RunResponse> whole = testing::RunSync(*unbounded, wide);
  GatedBackend::Gate gate;
  gate.open.Notify();
  // A linger changes nothing for a job that never shared a step.
  std::unique_ptr<Engine> bounded = Load(&gate, /*max_step_rows=*/16, absl::Hours(1));
  absl::StatusOr<v1::RunResponse> split = testing::RunSync(*bounded, wide);
  ASSERT_TRUE(whole.ok() && split.ok());
  absl::MutexLock lock(&gate.mu);
  EXPECT_GE(gate.step_rows.size(), 40u * 6u / 16u) << "240 decode rows, 16 a step at most";
  for (size_t rows : gate.step_rows) EXPECT_LE(rows, 16u);
  EXPECT_EQ(*std::max_element(gate.step_rows.begin(), gate.step_rows.end()), 16u)
      << "whole steps: it never shared one";
  ASSERT_EQ(split->results_size(), wide.items_size());
  for (int i = 0; i < wide.items_size(); ++i) {
    EXPECT_EQ(Tokens(split->results(i)), Tokens(whole->results(i))) << "item " << i;
  }
}

}  // namespace
}  // namespace arbor::worker
