// The job metrics (job_metrics.h) fed the events of real jobs against the scripted worker: what
// they export must agree with the jobs' own finished events, strategy counts and event stream.
#include "coordinator/service/job_metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/job/job.h"
#include "metrics/registry.h"
#include "tests/coordinator/job/job_harness.h"
#include "tests/support/metric_samples.h"

namespace arbor::coordinator {
namespace {

using metrics::testing::SampleValue;
using testing::Adaptive;
using testing::BaseSpec;
using testing::ByPosition;
using testing::Harness;
using testing::Hehv;
using testing::Helv;
using testing::Lehv;
using testing::Script;
using testing::ScriptInput;
using testing::Spread;

// Every row of the decision matrix at least once (as in job_test.cc), with the clock moving
// 1 ms per decode step so the latencies are not all zero.
struct TimedHarness {
  TimedHarness()
      : script(ByPosition({{4, Adaptive(Spread(20, 8))},
                           {5, Lehv(Spread(30, 6))},
                           {8, Helv(Spread(40, 8))},
                           {9, Hehv(Spread(44, 8))},
                           {10, Hehv(Spread(50, 8))}})),
        harness([this](const ScriptInput& in) {
          harness.clock.Advance(absl::Milliseconds(1));
          return script(in);
        }) {}
  Script script;
  Harness harness;
};

TEST(JobMetricsTest, AgreesWithTheJobsOwnAccount) {
  TimedHarness timed;
  Harness& h = timed.harness;
  std::shared_ptr<Job> job = h.Make(BaseSpec(10));
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();

  metrics::Registry registry;
  JobMetrics job_metrics(registry);
  JobMetrics::JobState state;
  for (const arbor::v1::GenerateEvent& event : h.events) job_metrics.Observe(event, state);
  const std::string text = registry.RenderText();

  const auto finished = h.Of(arbor::v1::GenerateEvent::kFinished);
  ASSERT_EQ(finished.size(), 1u);
  const arbor::v1::Usage& usage = finished[0].finished().usage();
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_jobs_finished_total{reason=\"max_tokens\"}"), 1);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_prompt_tokens_total"), 3);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_committed_tokens_total"), 10);
  EXPECT_EQ(usage.generated_tokens(), 10);
  EXPECT_GT(usage.explored_tokens(), 0);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_explored_tokens_total"), usage.explored_tokens());

  const arbor::v1::StrategyCounts counts = job->strategy_counts();
  const std::map<std::string, int32_t> by_name = {
      {"argmax", counts.argmax()},       {"adaptive", counts.adaptive()},
      {"branch", counts.branch()},       {"insert", counts.insert()},
      {"backspace", counts.backspace()}, {"hot_sample", counts.hot_sample()},
      {"resample", counts.resample()},   {"branch_sample", counts.branch_sample()}};
  for (const auto& [name, count] : by_name) {
    EXPECT_EQ(SampleValue(text, "arbor_coordinator_strategies_total{strategy=\"" + name + "\"}"),
              count)
        << name;
  }
  EXPECT_EQ(counts.branch(), 1);

  const auto opened = h.Of(arbor::v1::GenerateEvent::kBranchOpened);
  ASSERT_EQ(opened.size(), 1u);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_branch_width_count"), 1);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_branch_width_sum"),
            opened[0].branch_opened().candidates_size());
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_backspaces_total"),
            h.Of(arbor::v1::GenerateEvent::kBackspace).size());
  int inserted = 0;
  for (const auto& e : h.Of(arbor::v1::GenerateEvent::kInsert)) {
    inserted += e.insert().token_ids_size();
  }
  EXPECT_EQ(inserted, 1);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_inserted_tokens_total"), inserted);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_rehomes_total"), 0);

  // Latencies: the first token event's time, then the gaps between token events.
  std::vector<int64_t> token_times;
  for (const auto& e : h.events) {
    if (e.has_token() || e.has_insert()) token_times.push_back(e.time_us());
  }
  ASSERT_GE(token_times.size(), 2u);
  EXPECT_GT(token_times.front(), 0);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_time_to_first_token_seconds_count"), 1);
  EXPECT_NEAR(SampleValue(text, "arbor_coordinator_time_to_first_token_seconds_sum"),
              token_times.front() * 1e-6, 1e-9);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_inter_token_seconds_count"),
            token_times.size() - 1);
  EXPECT_NEAR(SampleValue(text, "arbor_coordinator_inter_token_seconds_sum"),
              (token_times.back() - token_times.front()) * 1e-6, 1e-9);
  // Streamed as they came: one per token event and per inserted token (backspaced ones too).
  int streamed = inserted;
  for (const auto& e : h.events) streamed += e.has_token() ? 1 : 0;
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_streamed_tokens_total"), streamed);
  EXPECT_GE(streamed, 10);
  // Queue and end-to-end time from the finished event's timings.
  const arbor::v1::Timings& timings = finished[0].finished().timings();
  EXPECT_GT(timings.total_us(), 0);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_job_seconds_count"), 1);
  EXPECT_NEAR(SampleValue(text, "arbor_coordinator_job_seconds_sum"), timings.total_us() * 1e-6,
              1e-9);
  EXPECT_NEAR(SampleValue(text, "arbor_coordinator_queue_seconds_sum"), timings.queued_us() * 1e-6,
              1e-9);
}

TEST(JobMetricsTest, CountsRehomesAndCancellations) {
  Harness h(ByPosition({}));
  h.worker->FailNext(absl::UnavailableError("worker gone"), 1, /*after=*/1);
  JobOptions options;
  options.steps_per_run = 2;
  std::shared_ptr<Job> moved = h.Make(BaseSpec(6), options);
  moved->Start();
  ASSERT_EQ(moved->rehomed(), 1);
  JobSpec spec = BaseSpec(6);
  spec.job_id = "job-2";
  std::shared_ptr<Job> cancelled = h.Make(spec);
  cancelled->Cancel();

  metrics::Registry registry;
  JobMetrics job_metrics(registry);
  std::map<std::string, JobMetrics::JobState> states;
  for (const arbor::v1::GenerateEvent& event : h.events) {
    job_metrics.Observe(event, states[event.job_id()]);
  }
  const std::string text = registry.RenderText();
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_rehomes_total"), 1);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_jobs_finished_total{reason=\"max_tokens\"}"), 1);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_jobs_finished_total{reason=\"cancelled\"}"), 1);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_committed_tokens_total"),
            moved->usage().generated_tokens() + cancelled->usage().generated_tokens());
}

}  // namespace
}  // namespace arbor::coordinator
