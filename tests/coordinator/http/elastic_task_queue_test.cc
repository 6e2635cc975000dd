// The gateway's elastic connection threads: a job that finds every thread busy gets a new one
// (up to the cap, beyond which jobs wait their turn), threads beyond the base end once idle, and
// shutdown runs what was queued.
#include "coordinator/http/elastic_task_queue.h"

#include <gtest/gtest.h>

#include <atomic>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"

namespace arbor::coordinator::http {
namespace {

// Waits up to 5 s for `done`.
template <typename F>
bool Eventually(F done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

TEST(ElasticTaskQueue, BusyThreadsGrowThePoolUpToTheCapAndIdleOnesEnd) {
  ElasticTaskQueue queue(/*base=*/2, /*max=*/5, /*idle=*/absl::Milliseconds(50));
  EXPECT_EQ(queue.threads(), 2);
  absl::Notification release;
  std::atomic<int> running{0}, finished{0};
  for (int i = 0; i < 7; ++i) {  // Like slow clients: each holds its thread.
    queue.enqueue([&] {
      ++running;
      release.WaitForNotification();
      ++finished;
    });
  }
  EXPECT_TRUE(Eventually([&] { return running == 5; })) << running;
  EXPECT_EQ(queue.threads(), 5);  // The cap: two jobs wait.
  release.Notify();
  EXPECT_TRUE(Eventually([&] { return finished == 7; }));
  EXPECT_TRUE(Eventually([&] { return queue.threads() == 2; })) << queue.threads();
}

TEST(ElasticTaskQueue, ShutdownRunsWhatWasQueued) {
  std::atomic<int> ran{0};
  {
    ElasticTaskQueue queue(/*base=*/1, /*max=*/1);
    for (int i = 0; i < 20; ++i) queue.enqueue([&] { ++ran; });
    queue.shutdown();
    EXPECT_EQ(ran, 20);
  }
  EXPECT_EQ(ran, 20);
}

}  // namespace
}  // namespace arbor::coordinator::http
