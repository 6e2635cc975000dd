// A job's standing with its worker: which worker serves it, the Run in flight there (so that a
// late completion is recognised), and the state of waiting and moving after failures — failures
// in a row, KV-exhaustion retries, the backoff of the wait in progress, a queued or deferred
// move, and how often the job moved or was prefilled again. The arithmetic of failover lives
// here; the Job (job.h) holds one session under its mutex, and its failover (job_failover.h)
// decides on it and performs the actions (releases, events, new Runs).
#ifndef ARBOR_COORDINATOR_JOB_WORKER_SESSION_H_
#define ARBOR_COORDINATOR_JOB_WORKER_SESSION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/job/worker_client.h"

namespace arbor::coordinator {

// How long and how often a job waits before it gives up (JobOptions holds the job's values).
struct WaitPolicy {
  absl::Duration first_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(1);
  absl::Duration max_wait = absl::Minutes(5);
  int32_t max_consecutive_failures = 3;
  int32_t exhausted_retries = 3;  // KV-exhaustion retries on one worker before moving.
};

class WorkerSession {
 public:
  // The Run in flight.
  struct InFlight {
    uint64_t generation = 0;
    std::vector<uint64_t> sequence_ids;
    std::shared_ptr<WorkerClient> worker;
    absl::Time sent;
    std::shared_ptr<RunCancellation> cancel;  // Never null.
  };

  WorkerSession(std::shared_ptr<WorkerClient> worker, WaitPolicy policy)
      : worker_(std::move(worker)), policy_(policy) {}

  const std::shared_ptr<WorkerClient>& worker() const { return worker_; }

  // A Run with `ids` sent now to the worker; returns its generation. The Run's cancellation is
  // in_flight()->cancel.
  uint64_t Sent(std::vector<uint64_t> ids, absl::Time now);
  // Run `generation` completed: its record when it is the Run in flight (no longer in flight
  // then), or nothing for a completion that no longer matters.
  std::optional<InFlight> Completed(uint64_t generation);
  const std::optional<InFlight>& in_flight() const { return in_flight_; }
  uint64_t generation() const { return generation_; }

  // A Run succeeded: failures, retries and the wait in progress start over.
  void Succeeded();
  // One more failure in a row, caused by `cause`: OK, or UNAVAILABLE saying the job gives up
  // once there were more than the policy allows.
  absl::Status CountFailure(const absl::Status& cause);
  // One more KV-exhaustion retry on this worker; true once it is time to look for another one.
  bool CountExhausted() { return ++exhausted_retries_ > policy_.exhausted_retries; }
  int32_t exhausted_retries() const { return exhausted_retries_; }
  // Starts or continues a wait (for KV or a worker) and returns its next backoff, doubling from
  // first_backoff up to max_backoff and never past `deadline`; `why`, with how long the job
  // waited, once max_wait or the deadline is spent.
  absl::StatusOr<absl::Duration> NextWait(const absl::Status& why, absl::Time now,
                                          absl::Time deadline);

  // Moving: a move is queued or running (nothing is sent meanwhile), or deferred until the Run
  // in flight completes.
  bool moving() const { return moving_; }
  // Marks a move queued; false when one already is.
  bool StartMove();
  void MoveAbandoned() { moving_ = false; }
  // The job now runs on `next`.
  void MovedTo(std::shared_ptr<WorkerClient> next);
  void DeferMove(absl::Status reason);
  std::optional<absl::Status> TakeDeferredMove();
  bool move_deferred() const { return deferred_move_.has_value(); }

  void CountReprefill() { ++reprefills_; }
  int32_t rehomed() const { return rehomed_; }
  int32_t reprefills() const { return reprefills_; }

 private:
  std::shared_ptr<WorkerClient> worker_;
  WaitPolicy policy_;
  uint64_t generation_ = 0;
  std::optional<InFlight> in_flight_;
  int32_t consecutive_failures_ = 0;
  int32_t exhausted_retries_ = 0;
  absl::Time waiting_since_ = absl::InfiniteFuture();
  int32_t waits_ = 0;
  bool moving_ = false;
  std::optional<absl::Status> deferred_move_;
  int32_t rehomed_ = 0;
  int32_t reprefills_ = 0;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_WORKER_SESSION_H_
