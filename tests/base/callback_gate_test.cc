// CallbackGate: calls pass while it is open, none after Close, nested calls never block, and
// Close returns only once the calls inside have left.
#include "base/callback_gate.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace arbor::base {
namespace {

TEST(CallbackGateTest, LetsCallsInUntilClosed) {
  CallbackGate gate;
  {
    CallbackGate::Pass pass = gate.Enter();
    EXPECT_TRUE(pass);
    EXPECT_TRUE(gate.Enter());  // Nested.
  }
  gate.Close();
  EXPECT_FALSE(gate.Enter());
}

TEST(CallbackGateTest, CloseWaitsForTheCallsInside) {
  CallbackGate gate;
  absl::Notification inside;
  absl::Notification closing;
  std::atomic<bool> left{false};
  std::thread call([&] {
    CallbackGate::Pass pass = gate.Enter();
    ASSERT_TRUE(pass);
    inside.Notify();
    closing.WaitForNotification();
    // Closed for new calls, nested ones included, while Close waits for this one to leave.
    while (gate.Enter()) std::this_thread::yield();
    left = true;
  });
  inside.WaitForNotification();
  closing.Notify();
  gate.Close();
  EXPECT_TRUE(left);
  call.join();
}

}  // namespace
}  // namespace arbor::base
