#include "coordinator/cluster/admission.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "metrics/registry.h"
#include "tests/support/metric_samples.h"

namespace arbor::coordinator {
namespace {

TEST(Admission, RunsThenQueuesThenRefusesNamingTheLimits) {
  Admission admission({2, 1});
  EXPECT_EQ(*admission.Admit("a"), Admitted::kRunNow);
  EXPECT_EQ(*admission.Admit("b"), Admitted::kRunNow);
  EXPECT_EQ(*admission.Admit("c"), Admitted::kQueued);
  absl::StatusOr<Admitted> refused = admission.Admit("d");
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("max_active_jobs 2"), std::string::npos);
  EXPECT_NE(refused.status().message().find("max_queued_jobs 1"), std::string::npos);
  EXPECT_EQ(admission.stats().active, 2);
  EXPECT_EQ(admission.stats().queued, 1);
}

TEST(Admission, ReleasingARunningJobPromotesTheOldestQueued) {
  Admission admission({1, 3});
  ASSERT_EQ(*admission.Admit("a"), Admitted::kRunNow);
  ASSERT_EQ(*admission.Admit("b"), Admitted::kQueued);
  ASSERT_EQ(*admission.Admit("c"), Admitted::kQueued);
  EXPECT_EQ(admission.Release("a"), "b");
  EXPECT_EQ(admission.Release("b"), "c");
  EXPECT_EQ(admission.Release("c"), std::nullopt);
  EXPECT_EQ(admission.stats().active, 0);
}

TEST(Admission, ReleasingAQueuedJobFreesItsPlaceOnly) {
  Admission admission({1, 1});
  ASSERT_TRUE(admission.Admit("a").ok());
  ASSERT_EQ(*admission.Admit("b"), Admitted::kQueued);
  EXPECT_EQ(admission.Release("b"), std::nullopt);
  EXPECT_EQ(admission.stats().queued, 0);
  EXPECT_EQ(admission.stats().active, 1);
  EXPECT_EQ(*admission.Admit("c"), Admitted::kQueued);
}

TEST(Admission, DuplicateAndUnknownIds) {
  Admission admission({1, 1});
  ASSERT_TRUE(admission.Admit("a").ok());
  EXPECT_EQ(admission.Admit("a").status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(admission.Release("nope"), std::nullopt);
  EXPECT_EQ(admission.stats().active, 1);
}

TEST(Admission, ConcurrentAdmitsNeverExceedTheLimits) {
  Admission admission({4, 4});
  std::atomic<int> run_now{0}, queued{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        absl::StatusOr<Admitted> a = admission.Admit(std::to_string(t * 100 + i));
        if (!a.ok()) {
          ++refused;
        } else if (*a == Admitted::kRunNow) {
          ++run_now;
        } else {
          ++queued;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(run_now.load(), 4);
  EXPECT_EQ(queued.load(), 4);
  EXPECT_EQ(refused.load(), 32);
}

TEST(Admission, ExportsRunningAndQueuedJobsAndRefusals) {
  using metrics::testing::SampleValue;
  metrics::Registry registry;
  Admission admission({1, 1}, registry);
  ASSERT_EQ(*admission.Admit("a"), Admitted::kRunNow);
  ASSERT_EQ(*admission.Admit("b"), Admitted::kQueued);
  ASSERT_FALSE(admission.Admit("c").ok());
  ASSERT_FALSE(admission.Admit("a").ok());  // ALREADY_EXISTS is no refusal for load.
  std::string text = registry.RenderText();
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_active_jobs"), 1);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_queued_jobs"), 1);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_admission_rejections_total"), 1);
  ASSERT_EQ(admission.Release("a"), "b");
  text = registry.RenderText();
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_active_jobs"), 1);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_queued_jobs"), 0);
  admission.Release("b");
  EXPECT_EQ(SampleValue(registry.RenderText(), "arbor_coordinator_active_jobs"), 0);
}

}  // namespace
}  // namespace arbor::coordinator
