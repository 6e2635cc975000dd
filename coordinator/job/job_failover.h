// A job's failover: what it does when its worker fails, runs out of KV or drains — wait with
// backoff where waiting helps (KV frees up, a worker comes back), bounded by the deadline and
// JobOptions::max_wait, then re-home and re-prefill the committed path (and any live rollouts)
// there. The arithmetic of waiting and moving is the worker session's (worker_session.h); this
// decides and acts on it, through the job's main path (its sequences and open branch) and
// JobControl (job_control.h). The job holds one under its lock and runs its entry points,
// Move and Retry, taking the lock for the parts below.
#ifndef ARBOR_COORDINATOR_JOB_JOB_FAILOVER_H_
#define ARBOR_COORDINATOR_JOB_JOB_FAILOVER_H_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "coordinator/job/action_queue.h"
#include "coordinator/job/job_control.h"
#include "coordinator/job/job_lifecycle.h"
#include "coordinator/job/job_output.h"
#include "coordinator/job/job_spec.h"
#include "coordinator/job/main_path.h"
#include "coordinator/job/worker_client.h"
#include "coordinator/job/worker_session.h"

namespace arbor::coordinator {

class JobFailover {
 public:
  // The job's parts; each must outlive the failover.
  struct Parts {
    const JobSpec* spec = nullptr;
    base::Clock* clock = nullptr;
    // JobEnvironment::schedule_after (optional).
    std::function<void(absl::Duration delay, std::function<void()> callback)> schedule_after;
    JobControl* control = nullptr;
    MainPath* path = nullptr;
    JobOutput* output = nullptr;
    WorkerSession* session = nullptr;
    const JobLifecycle* life = nullptr;
    ActionQueue* actions = nullptr;  // Where the callbacks that re-enter the job are queued.
  };

  explicit JobFailover(Parts parts) : parts_(std::move(parts)) {}

  // A Run failed with `status` (or stopped on a worker's failure): end the job, prefill it
  // again, shrink its search, wait for KV, or move it, as the failure calls for.
  void HandleFailure(const absl::Status& status);
  // Job::Rehome: moves now when no Run is in flight, else once it completes. Returns the worker
  // whose Runs to abandon now (one presumed dead, `reason` UNAVAILABLE), or null.
  std::shared_ptr<WorkerClient> Rehome(absl::Status reason);
  // Queues JobControl::Move unless one is queued or running.
  void RequestMove(absl::Status cause, bool forced);
  // JobControl::Move, once the re-home callback answered `next` for the job leaving `from`.
  void Moved(const WorkerClient& from, absl::StatusOr<std::shared_ptr<WorkerClient>> next,
             const absl::Status& cause, bool forced);
  // JobControl::Retry: false when something happened since the failure of Run `generation`
  // (the job ended, sent another Run, or moves), so that there is nothing to do.
  bool Retry(uint64_t generation, bool move);

 private:
  // RESOURCE_EXHAUSTED: hands back the job's sequences and schedules Retry() after a backoff.
  void WaitForKv(const absl::Status& status);
  // NOT_FOUND: the worker no longer holds the job's sequences; prefill them there again.
  void Reprefill(const absl::Status& status);
  // No worker can take the job after its own failed: wait for one, or fail.
  void WaitForWorker(const absl::Status& why, const absl::Status& cause, bool forced);

  const Parts parts_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_JOB_FAILOVER_H_
