// ThreadTimer: callbacks run once, in deadline order, not before their delay; callbacks may
// schedule more; destruction drops what is not due yet.
#include "coordinator/job/timer.h"

#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arbor::coordinator {
namespace {

using ::testing::ElementsAre;

TEST(ThreadTimerTest, RunsInDeadlineOrderNotBeforeTheDelay) {
  absl::Mutex mu;
  std::vector<int> order;
  absl::Notification done;
  const absl::Time start = absl::Now();
  absl::Duration third_at;
  {
    ThreadTimer timer;
    const auto record = [&](int n) {
      absl::MutexLock lock(&mu);
      order.push_back(n);
    };
    timer.ScheduleAfter(absl::Milliseconds(30), [&] {
      record(3);
      third_at = absl::Now() - start;
      // A callback may schedule another (the timer's lock is not held).
      timer.ScheduleAfter(absl::ZeroDuration(), [&] {
        record(4);
        done.Notify();
      });
    });
    timer.ScheduleAfter(absl::Milliseconds(10), [&] { record(2); });
    timer.ScheduleAfter(absl::ZeroDuration(), [&] { record(1); });
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  }
  EXPECT_THAT(order, ElementsAre(1, 2, 3, 4));
  EXPECT_GE(third_at, absl::Milliseconds(30));
}

TEST(ThreadTimerTest, DestructionDropsPendingCallbacks) {
  bool ran = false;
  {
    ThreadTimer timer;
    timer.ScheduleAfter(absl::Hours(1), [&] { ran = true; });
  }  // Returns at once rather than after an hour.
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace arbor::coordinator
