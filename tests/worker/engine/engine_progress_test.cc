// The engine's run progress (Engine::Run's `progress`, Worker.RunStream's source) in-process over
// a tiny make-model checkpoint: each final step once, in order, before the answer; a SEARCH step
// that may still be backspaced held until it cannot change; at most one update per
// EngineOptions::min_progress_interval.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "tests/worker/engine/engine_harness.h"
#include "tests/worker/engine/tiny_model_suite.h"
#include "worker/engine/engine.h"

namespace arbor::worker {
namespace {

using testing::DecodeItem;
using testing::LoadEngine;
using testing::MatrixRow;
using testing::Prompt;
using testing::StructuralItem;
using v1::RunRequest;
using v1::RunResponse;

class EngineProgressTest : public testing::TinyModelSuite<11> {
 protected:
  static std::unique_ptr<Engine> Load(absl::Duration progress_interval) {
    WorkerSetupOptions options;
    options.model = model_->dir();
    options.kv_tokens = 4096;
    options.threads = 1;
    options.min_progress_interval = progress_interval;
    absl::StatusOr<std::unique_ptr<Engine>> engine = LoadEngine(options);
    EXPECT_TRUE(engine.ok()) << engine.status();
    return engine.ok() ? *std::move(engine) : nullptr;
  }
};

// Worker.RunStream's source: after a step, the steps that can no longer change, each once and
// in order, never after the answer — a BACKSPACE-able step only once the next step shows whether
// it gains the re-draw top-K.
TEST_F(EngineProgressTest, ReportsEachFinalStepOnceBeforeTheAnswer) {
  std::unique_ptr<Engine> engine = Load(absl::ZeroDuration());
  RunRequest request;
  *request.add_items() = DecodeItem(1, Prompt(6), 12);
  *request.add_items() = StructuralItem(2, 6, MatrixRow::kHehv);  // RESAMPLE, then BACKSPACE.
  absl::Mutex mu;
  std::vector<std::vector<v1::StepResult>> streamed(2);
  int updates = 0;
  bool answered = false;
  bool progress_after_answer = false;
  absl::Notification done;
  absl::StatusOr<RunResponse> response;
  engine->Run(
      request, {},
      [&](absl::StatusOr<RunResponse> result) {
        absl::MutexLock lock(&mu);
        response = std::move(result);
        answered = true;
        done.Notify();
      },
      [&](v1::RunProgress progress) {
        absl::MutexLock lock(&mu);
        progress_after_answer = progress_after_answer || answered;
        ++updates;
        ASSERT_EQ(progress.results_size(), 2);
        for (int i = 0; i < 2; ++i) {
          EXPECT_EQ(progress.results(i).sequence_id(), request.items(i).sequence_id());
          for (const v1::StepResult& step : progress.results(i).steps()) {
            streamed[i].push_back(step);
          }
        }
      });
  done.WaitForNotification();
  absl::MutexLock lock(&mu);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_FALSE(progress_after_answer);
  EXPECT_EQ(updates, 11) << "one per step but the last";
  // The decode item: every step but the one that ended the run.
  ASSERT_EQ(response->results(0).steps_size(), 12);
  ASSERT_EQ(streamed[0].size(), 11u);
  // The structural item ended at its second step, while the run went on: both steps streamed,
  // the first with the top-K its BACKSPACE attached.
  ASSERT_EQ(response->results(1).steps_size(), 2);
  ASSERT_EQ(streamed[1].size(), 2u);
  EXPECT_EQ(streamed[1][0].top_k_size(), 6);
  for (int i = 0; i < 2; ++i) {
    for (size_t s = 0; s < streamed[i].size(); ++s) {
      EXPECT_EQ(streamed[i][s].SerializeAsString(),
                response->results(i).steps(static_cast<int>(s)).SerializeAsString())
          << "item " << i << " step " << s;
    }
  }
}

// At most one progress update per EngineOptions::min_progress_interval: with an hour, the first
// step's and then nothing until the answer, which carries the rest.
TEST_F(EngineProgressTest, ComesAtMostOncePerInterval) {
  std::unique_ptr<Engine> engine = Load(absl::Hours(1));
  RunRequest request;
  *request.add_items() = DecodeItem(1, Prompt(6), 12);
  std::atomic<int> updates{0};
  std::atomic<int> streamed{0};
  absl::Notification done;
  engine->Run(
      request, {}, [&](absl::StatusOr<RunResponse> result) { done.Notify(); },
      [&](v1::RunProgress progress) {
        ++updates;
        streamed += progress.results(0).steps_size();
      });
  done.WaitForNotification();
  EXPECT_EQ(updates.load(), 1);
  EXPECT_EQ(streamed.load(), 1);
}

}  // namespace
}  // namespace arbor::worker
