// A job's lifecycle: started once, ended once, each reason to its state and its word in logs.
#include "coordinator/job/job_lifecycle.h"

#include <gtest/gtest.h>

#include <string>

namespace arbor::coordinator {
namespace {

TEST(JobLifecycle, StartsOnceAndEndsByReason) {
  JobLifecycle life;
  EXPECT_EQ(life.state(), arbor::v1::JOB_STATE_QUEUED);
  EXPECT_FALSE(life.ended());
  EXPECT_TRUE(life.Start());
  EXPECT_TRUE(life.running());
  EXPECT_FALSE(life.Start());
  EXPECT_EQ(std::string(life.End(arbor::v1::FINISH_REASON_MAX_TOKENS, "")), "finished");
  EXPECT_EQ(life.state(), arbor::v1::JOB_STATE_FINISHED);
  EXPECT_TRUE(life.ended());
  EXPECT_FALSE(life.Start());

  JobLifecycle cancelled;
  EXPECT_EQ(std::string(cancelled.End(arbor::v1::FINISH_REASON_CANCELLED, "")), "cancelled");
  EXPECT_EQ(cancelled.state(), arbor::v1::JOB_STATE_CANCELLED);
  JobLifecycle failed;
  EXPECT_TRUE(failed.Start());
  EXPECT_EQ(std::string(failed.End(arbor::v1::FINISH_REASON_ERROR, "worker lost")), "failed");
  EXPECT_EQ(failed.state(), arbor::v1::JOB_STATE_FAILED);
  EXPECT_EQ(failed.reason(), arbor::v1::FINISH_REASON_ERROR);
  EXPECT_EQ(failed.error(), "worker lost");
}

}  // namespace
}  // namespace arbor::coordinator
