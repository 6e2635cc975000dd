// A job's standing with its worker (coordinator/job/worker_session.h): the Run in flight
// recognised by generation, failures and KV retries counted against the policy, backoffs that
// double up to a cap and stop at the deadline or max_wait, and moves queued once.
#include "coordinator/job/worker_session.h"

#include <gtest/gtest.h>

namespace arbor::coordinator {
namespace {

const WaitPolicy kPolicy{absl::Milliseconds(50), absl::Milliseconds(300), absl::Seconds(2), 2, 1};

TEST(WorkerSession, OnlyTheRunInFlightCompletes) {
  WorkerSession session(nullptr, kPolicy);
  const absl::Time now = absl::UnixEpoch();
  const uint64_t first = session.Sent({1, 2}, now);
  EXPECT_FALSE(session.Completed(first + 1).has_value());
  const uint64_t second = session.Sent({3}, now);  // A newer Run replaces the record.
  EXPECT_FALSE(session.Completed(first).has_value());
  const std::optional<WorkerSession::InFlight> done = session.Completed(second);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->sequence_ids, std::vector<uint64_t>{3});
  EXPECT_FALSE(session.in_flight().has_value());
  EXPECT_FALSE(session.Completed(second).has_value());  // Once.
}

TEST(WorkerSession, BackoffDoublesToItsCapAndStopsAtTheDeadlineOrMaxWait) {
  WorkerSession session(nullptr, kPolicy);
  const absl::Status why = absl::ResourceExhaustedError("full");
  absl::Time now = absl::UnixEpoch();
  const absl::Time far = now + absl::Hours(1);
  const absl::Duration want[] = {absl::Milliseconds(50), absl::Milliseconds(100),
                                 absl::Milliseconds(200), absl::Milliseconds(300),
                                 absl::Milliseconds(300)};
  for (absl::Duration w : want) EXPECT_EQ(*session.NextWait(why, now, far), w);
  // Never past the deadline.
  EXPECT_EQ(*session.NextWait(why, now, now + absl::Milliseconds(10)), absl::Milliseconds(10));
  // Past max_wait: the error says how long, with the cause's code.
  now += absl::Seconds(2);
  const absl::StatusOr<absl::Duration> gave_up = session.NextWait(why, now, far);
  ASSERT_FALSE(gave_up.ok());
  EXPECT_EQ(gave_up.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(gave_up.status().message().find("gave up after waiting 2s"), std::string::npos);
  // A success starts the wait over.
  session.Succeeded();
  EXPECT_EQ(*session.NextWait(why, now, far), absl::Milliseconds(50));
}

TEST(WorkerSession, FailuresAndRetriesCountAgainstThePolicy) {
  WorkerSession session(nullptr, kPolicy);
  const absl::Status cause = absl::UnavailableError("gone");
  EXPECT_TRUE(session.CountFailure(cause).ok());
  EXPECT_TRUE(session.CountFailure(cause).ok());
  const absl::Status gave_up = session.CountFailure(cause);  // The third in a row: too many.
  EXPECT_EQ(gave_up.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(gave_up.message().find("gave up after 3 worker failures"), std::string::npos);
  session.Succeeded();
  EXPECT_TRUE(session.CountFailure(cause).ok());
  EXPECT_FALSE(session.CountExhausted());  // One retry allowed here...
  EXPECT_TRUE(session.CountExhausted());   // ...then look for another worker.
  session.MovedTo(nullptr);
  EXPECT_EQ(session.rehomed(), 1);
  EXPECT_FALSE(session.CountExhausted());  // Counted per worker.
}

TEST(WorkerSession, AMoveIsQueuedOnceAndADeferredOneKeepsTheFirstReason) {
  WorkerSession session(nullptr, kPolicy);
  EXPECT_TRUE(session.StartMove());
  EXPECT_FALSE(session.StartMove());
  session.MoveAbandoned();
  EXPECT_TRUE(session.StartMove());
  session.DeferMove(absl::UnavailableError("draining"));
  session.DeferMove(absl::UnavailableError("lost"));
  const std::optional<absl::Status> reason = session.TakeDeferredMove();
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(reason->message(), "draining");
  EXPECT_FALSE(session.TakeDeferredMove().has_value());
  session.MovedTo(nullptr);
  EXPECT_FALSE(session.moving());
}

}  // namespace
}  // namespace arbor::coordinator
