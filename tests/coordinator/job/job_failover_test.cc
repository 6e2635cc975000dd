// The job driver's failover against scripted workers (scripted_worker.h): a failed, draining or
// dead worker's jobs re-homed with their committed path prefilled elsewhere, no sequence left
// behind by a lost answer, repeated failures failing the job, and a worker out of KV retried
// with backoff, bounded by max_wait, without ever failing the job for a transient lack.
#include "coordinator/job/job.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/job/job_harness.h"

namespace arbor::coordinator {
namespace {

using testing::BaseSpec;
using testing::ByPosition;
using testing::Decode;
using ::testing::ElementsAre;
using testing::ExpectCleanFinish;
using testing::Harness;
using ::testing::IsEmpty;

TEST(JobTest, WorkerFailureRehomesAndPrefillsTheCommittedPath) {
  Harness h(ByPosition({}));
  h.worker->FailNext(absl::UnavailableError("worker gone"), 1, /*after=*/1);
  JobOptions options;
  options.steps_per_run = 2;
  auto job = h.Make(BaseSpec(6), options);
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_EQ(job->rehomed(), 1);
  EXPECT_EQ(job->worker_id(), "w1");
  EXPECT_THAT(h.rehome_calls, ElementsAre("w0"));
  const auto spare_requests = h.spare->requests();
  ASSERT_FALSE(spare_requests.empty());
  const arbor::v1::RunItem& prefill = spare_requests[0].items(0);
  EXPECT_FALSE(prefill.has_truncate_to());
  EXPECT_THAT(prefill.append(), ElementsAre(1, 2, 3, 10, 10)) << "prompt + committed tokens";
  EXPECT_EQ(job->token_ids().size(), 6u);
  EXPECT_EQ(h.Of(arbor::v1::GenerateEvent::kRehomed).size(), 1u);
  EXPECT_THAT(h.spare->live(), IsEmpty());
}

// A run whose answer is lost (its deadline passed while the worker kept going) still created
// its sequences: the first run's new main sequence on w0, and after the move the re-prefilled
// one on w1. Both are handed back, whether the job moves on or ends.
TEST(JobTest, RunsWhoseAnswersAreLostLeaveNoSequencesBehind) {
  Harness h(ByPosition({}));
  h.worker->LoseNextAnswers(absl::DeadlineExceededError("run deadline"));
  h.spare->LoseNextAnswers(absl::DeadlineExceededError("run deadline"));
  auto job = h.Make(BaseSpec(6));
  job->Start();
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_EQ(job->token_ids().size(), 6u);
  EXPECT_THAT(h.worker->live(), IsEmpty());
  ExpectCleanFinish(*job, *h.spare);

  // The same when the job's deadline passes while the run is out, and it ends instead of moving.
  Harness late(ByPosition({}));
  late.worker->LoseNextAnswers(absl::DeadlineExceededError("run deadline"));
  late.worker->Hold(true);
  JobSpec spec = BaseSpec(6);
  spec.deadline = late.clock.Now() + absl::Milliseconds(5);
  auto ended = late.Make(spec);
  ended->Start();
  late.clock.Advance(absl::Milliseconds(10));
  late.worker->Hold(false);
  late.worker->ReleaseHeld();
  EXPECT_EQ(ended->finish_reason(), arbor::v1::FINISH_REASON_DEADLINE) << ended->error();
  EXPECT_THAT(late.worker->live(), IsEmpty());
}

TEST(JobTest, RehomeWaitsForTheRunInFlightThenPrefillsElsewhere) {
  Harness h(ByPosition({}));
  auto job = h.StartHeld(6, 2);
  job->Rehome(absl::FailedPreconditionError("w0 drains"));
  EXPECT_THAT(h.rehome_calls, IsEmpty()) << "the Run in flight completes first";
  h.worker->ReleaseHeld();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_THAT(h.rehome_calls, ElementsAre("w0"));
  EXPECT_EQ(h.worker->requests().size(), 1u) << "nothing more was sent to w0";
  EXPECT_THAT(h.worker->live(), IsEmpty()) << "the main sequence is released on w0";
  const auto spare_requests = h.spare->requests();
  ASSERT_FALSE(spare_requests.empty());
  EXPECT_THAT(spare_requests[0].items(0).append(), ElementsAre(1, 2, 3, 10, 10));
  EXPECT_EQ(job->token_ids().size(), 6u);
  EXPECT_EQ(job->rehomed(), 1);
  EXPECT_EQ(job->worker_id(), "w1");
  const auto rehomed = h.Of(arbor::v1::GenerateEvent::kRehomed);
  ASSERT_EQ(rehomed.size(), 1u);
  EXPECT_EQ(rehomed[0].rehomed().to_worker(), "w1");
  EXPECT_THAT(rehomed[0].rehomed().reason(), ::testing::HasSubstr("w0 drains"));
  ExpectCleanFinish(*job, *h.spare);
}

// A frozen worker (SIGSTOP) keeps its connection and never answers: once it is presumed dead,
// its jobs move at once instead of waiting for a Run that may never complete.
TEST(JobTest, RehomeFromADeadWorkerAbandonsTheRunInFlight) {
  Harness h(ByPosition({}));
  auto job = h.StartHeld(6, 2);
  job->Rehome(absl::UnavailableError("worker w0 died: no heartbeat for 10s"));
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_THAT(h.rehome_calls, ElementsAre("w0"));
  EXPECT_EQ(job->worker_id(), "w1");
  EXPECT_EQ(job->token_ids().size(), 6u);
  ExpectCleanFinish(*job, *h.spare);
}

TEST(JobTest, RehomeMovesAQueuedJobAtOnceAndStaysWithoutAWorker) {
  Harness h(ByPosition({}));
  auto job = h.Make(BaseSpec(4));
  job->Rehome(absl::FailedPreconditionError("w0 drains"));  // No Run in flight: now.
  EXPECT_EQ(job->worker_id(), "w1");
  job->Start();
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_THAT(h.worker->requests(), IsEmpty());
  ExpectCleanFinish(*job, *h.spare);

  // No worker can take it: a drained job finishes where it is (a failed one would fail).
  Harness h2(ByPosition({}));
  h2.rehome_error = absl::UnavailableError("no other worker");
  auto job2 = h2.StartHeld(6, 2);
  job2->Rehome(absl::FailedPreconditionError("w0 drains"));
  for (int i = 0; i < 10 && job2->state() == arbor::v1::JOB_STATE_RUNNING; ++i) {
    h2.worker->ReleaseHeld();
  }
  EXPECT_EQ(job2->state(), arbor::v1::JOB_STATE_FINISHED) << job2->error();
  EXPECT_THAT(h2.rehome_calls, ElementsAre("w0"));
  EXPECT_EQ(job2->rehomed(), 0);
  EXPECT_EQ(job2->token_ids().size(), 6u);
  ExpectCleanFinish(*job2, *h2.worker);
}

TEST(JobTest, RepeatedFailuresFailTheJob) {
  Harness h(ByPosition({}));
  h.worker->FailNext(absl::UnavailableError("down"), 1);
  h.spare->FailNext(absl::UnavailableError("down"), 100);
  JobOptions options;
  options.max_consecutive_failures = 2;
  auto job = h.Make(BaseSpec(6), options);
  job->Start();
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_FAILED);
  EXPECT_EQ(job->finish_reason(), arbor::v1::FINISH_REASON_ERROR);
}

TEST(JobTest, KvExhaustedRetriesWithBackoffBeforeRehoming) {
  Harness h(ByPosition({}));
  h.worker->FailNext(absl::ResourceExhaustedError("kv full"), 2);
  std::vector<absl::Duration> waits;
  std::vector<std::function<void()>> timers;
  JobSpec spec = BaseSpec(4);
  JobOptions options;
  options.exhausted_retries = 2;
  options.exhausted_backoff = absl::Milliseconds(10);
  auto job = h.Make(spec, options);
  // Make() builds its own environment; a job with a fake timer needs one more.
  JobEnvironment env;
  env.worker = h.worker;
  env.next_sequence_id = [&h] { return h.next_id++; };
  env.decode = Decode;
  env.clock = &h.clock;
  env.sink = [&h](const arbor::v1::GenerateEvent& e) { h.events.push_back(e); };
  env.rehome = [&h](const WorkerClient& failed,
                    const absl::Status&) -> absl::StatusOr<std::shared_ptr<WorkerClient>> {
    h.rehome_calls.push_back(failed.id());
    return std::shared_ptr<WorkerClient>(h.spare);
  };
  env.schedule_after = [&](absl::Duration d, std::function<void()> f) {
    waits.push_back(d);
    timers.push_back(std::move(f));
  };
  job = *Job::Create(spec, options, env);
  job->Start();
  ASSERT_EQ(timers.size(), 1u);
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_RUNNING) << "waiting, not re-homed";
  timers[0]();
  ASSERT_EQ(timers.size(), 2u);
  EXPECT_THAT(waits, ElementsAre(absl::Milliseconds(10), absl::Milliseconds(20)));
  timers[1]();
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_THAT(h.rehome_calls, IsEmpty()) << "the third try on the same worker succeeded";
  EXPECT_EQ(h.worker->requests().size(), 3u);
  ExpectCleanFinish(*job, *h.worker);

  // Retries used up: the next RESOURCE_EXHAUSTED re-homes.
  Harness h2(ByPosition({}));
  h2.worker->FailNext(absl::ResourceExhaustedError("kv full"), 5);
  options.exhausted_retries = 0;
  auto job2 = h2.Make(spec, options);
  job2->Start();
  EXPECT_THAT(h2.rehome_calls, ElementsAre("w0"));
  EXPECT_EQ(job2->state(), arbor::v1::JOB_STATE_FINISHED);
}

// Fires the oldest pending timer; false when none is pending.
bool FireNext(Harness& h) {
  if (h.timers.empty()) return false;
  std::function<void()> callback = std::move(h.timers.front().second);
  h.timers.erase(h.timers.begin());
  callback();
  return true;
}

TEST(JobTest, KvExhaustionNeverFailsTheJobItWaitsHandingBackItsSequences) {
  Harness h(ByPosition({}));
  h.timed = true;
  h.rehome_error = absl::UnavailableError("no other worker");
  JobOptions options;
  options.steps_per_run = 2;
  options.exhausted_retries = 1;
  auto job = h.Make(BaseSpec(6), options);
  h.worker->FailNext(absl::ResourceExhaustedError("kv full"), 6, /*after=*/1);
  job->Start();
  std::vector<absl::Duration> waits;
  while (job->state() == arbor::v1::JOB_STATE_RUNNING && !h.timers.empty()) {
    waits.push_back(h.timers.front().first);
    EXPECT_THAT(h.worker->live(), IsEmpty()) << "a waiting job holds no KV";
    ASSERT_TRUE(FireNext(h));
  }
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_EQ(job->token_ids().size(), 6u);
  ASSERT_EQ(waits.size(), 6u);
  EXPECT_EQ(waits[0], absl::Milliseconds(50));
  EXPECT_EQ(waits[1], absl::Milliseconds(100));
  EXPECT_GT(h.rehome_calls.size(), 0u) << "after a retry there, it looked for another worker";
  EXPECT_EQ(job->rehomed(), 0);
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, KvWaitIsBoundedByMaxWait) {
  Harness h(ByPosition({}));
  h.timed = true;
  h.rehome_error = absl::UnavailableError("no other worker");
  JobOptions options;
  options.max_wait = absl::Seconds(1);
  auto job = h.Make(BaseSpec(6), options);
  h.worker->FailNext(absl::ResourceExhaustedError("kv full"), 1000);
  job->Start();
  for (int i = 0; i < 100 && job->state() == arbor::v1::JOB_STATE_RUNNING; ++i) {
    h.clock.Advance(absl::Milliseconds(300));
    ASSERT_TRUE(FireNext(h));
  }
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_FAILED);
  EXPECT_THAT(job->error(), ::testing::HasSubstr("gave up after waiting"));
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, AFailedWorkerWithNoOtherMakesTheJobWaitForOne) {
  Harness h(ByPosition({}));
  h.timed = true;
  h.rehome_error = absl::UnavailableError("no worker is ready");
  auto job = h.Make(BaseSpec(4));
  h.worker->FailNext(absl::UnavailableError("Connection refused"), 1);
  job->Start();
  ASSERT_EQ(h.timers.size(), 1u);
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_RUNNING) << "waiting, not failed";
  ASSERT_TRUE(FireNext(h));  // Still no worker: it waits again, longer.
  ASSERT_EQ(h.timers.size(), 1u);
  EXPECT_EQ(h.timers[0].first, absl::Milliseconds(100));
  h.rehome_error = absl::OkStatus();  // A worker registered.
  ASSERT_TRUE(FireNext(h));
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_EQ(job->worker_id(), "w1");
  EXPECT_THAT(h.rehome_calls, ElementsAre("w0", "w0", "w0"));
  ExpectCleanFinish(*job, *h.spare);

  // Cancelled while waiting: the pending retry does nothing.
  Harness h2(ByPosition({}));
  h2.timed = true;
  h2.rehome_error = absl::UnavailableError("no worker is ready");
  auto job2 = h2.Make(BaseSpec(4));
  h2.worker->FailNext(absl::UnavailableError("Connection refused"), 1);
  job2->Start();
  job2->Cancel();
  ASSERT_TRUE(FireNext(h2));
  EXPECT_EQ(job2->state(), arbor::v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(h2.rehome_calls, ElementsAre("w0"));
}

}  // namespace
}  // namespace arbor::coordinator
