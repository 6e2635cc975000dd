// RunCancellation: the stop runs once, whichever of the job's cancel and the client's OnCancel
// comes first, and never before both.
#include "coordinator/job/run_cancellation.h"

#include <atomic>
#include <thread>

#include "gtest/gtest.h"

namespace arbor::coordinator {
namespace {

TEST(RunCancellationTest, StopsTheCallWhenTheJobCancelsLater) {
  RunCancellation cancel;
  int stops = 0;
  cancel.OnCancel([&] { ++stops; });
  EXPECT_EQ(stops, 0);
  EXPECT_FALSE(cancel.cancelled());
  cancel.Cancel();
  EXPECT_EQ(stops, 1);
  EXPECT_TRUE(cancel.cancelled());
  cancel.Cancel();
  EXPECT_EQ(stops, 1) << "once";
}

TEST(RunCancellationTest, StopsTheCallAtOnceWhenTheJobCancelledFirst) {
  RunCancellation cancel;
  cancel.Cancel();
  int stops = 0;
  cancel.OnCancel([&] { ++stops; });
  EXPECT_EQ(stops, 1);
}

TEST(RunCancellationTest, RacingSidesStopExactlyOnce) {
  for (int round = 0; round < 200; ++round) {
    RunCancellation cancel;
    std::atomic<int> stops = 0;
    std::thread job([&] { cancel.Cancel(); });
    std::thread client([&] { cancel.OnCancel([&] { ++stops; }); });
    job.join();
    client.join();
    ASSERT_EQ(stops.load(), 1) << "round " << round;
  }
}

}  // namespace
}  // namespace arbor::coordinator
