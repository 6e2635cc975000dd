// The job's side-effect queue: actions run in the order they were pushed, those pushed by an
// action run after it in the same drain, and a thread that drains while another already does
// returns at once, leaving its actions to that thread.
#include "coordinator/job/action_queue.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"

namespace arbor::coordinator {
namespace {

TEST(ActionQueue, RunsActionsInOrderAndThoseTheyPushAfterThem) {
  ActionQueue queue;
  std::vector<int> ran;
  queue.Push([&] {
    ran.push_back(1);
    queue.Push([&] { ran.push_back(3); });
    queue.Drain();  // Re-entrant: the outer drain runs it, after what was queued before.
    ran.push_back(2);
  });
  queue.Push([&] { ran.push_back(4); });
  EXPECT_TRUE(ran.empty());  // Nothing runs on Push.
  queue.Drain();
  EXPECT_EQ(ran, (std::vector<int>{1, 2, 4, 3}));
  queue.Drain();  // Empty: nothing more.
  EXPECT_EQ(ran.size(), 4u);
}

TEST(ActionQueue, ASecondDrainerLeavesItsActionsToTheFirst) {
  ActionQueue queue;
  absl::Notification started, release;
  std::vector<int> ran;
  queue.Push([&] {
    started.Notify();
    release.WaitForNotification();
    ran.push_back(1);
  });
  std::thread first([&] { queue.Drain(); });
  started.WaitForNotification();
  queue.Push([&] { ran.push_back(2); });
  queue.Drain();  // The first thread is draining: returns at once.
  EXPECT_TRUE(ran.empty());
  release.Notify();
  first.join();
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
}

}  // namespace
}  // namespace arbor::coordinator
