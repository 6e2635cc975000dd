// What a job's main path (main_path.h) and its failover (job_failover.h) may ask of the job they
// belong to: go on, end, send a Run to its worker or release sequences there, name it in log
// lines, and re-enter it later from outside its lock. Job implements it; both call it only under
// the job's lock (but Hold, and Move and Retry from the callbacks they queue or schedule), so
// neither sees the job's lifecycle, mutex or side-effect queue, nor the other's state.
#ifndef ARBOR_COORDINATOR_JOB_JOB_CONTROL_H_
#define ARBOR_COORDINATOR_JOB_JOB_CONTROL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "arbor/v1/generation.pb.h"
#include "arbor/v1/worker.pb.h"
#include "base/log_fields.h"

namespace arbor::coordinator {

class JobControl {
 public:
  // Sends the next Run, unless the job ends on its deadline or moves first.
  virtual void Continue() = 0;
  // Ends the job with `reason` (Fail: with an error) and releases its sequences.
  void Finish(arbor::v1::FinishReason reason) { End(reason, ""); }
  void Fail(const absl::Status& status) { End(arbor::v1::FINISH_REASON_ERROR, status.ToString()); }
  // Sends one Run whose items hold the sequences `ids`, in order; its response comes back
  // through the main path's OnDone.
  virtual void SendRun(arbor::v1::RunRequest request, std::vector<uint64_t> ids) = 0;
  virtual void Release(std::vector<uint64_t> ids) = 0;  // Sequences done with, on the worker.
  // The fields of the job's log lines (base/log_fields.h): job_id, worker, `event`, then `more`.
  virtual base::LogFields LogFieldsFor(std::string_view event, base::LogFields more) const = 0;

  // The job, kept alive while the pointer is held: for the callbacks below.
  virtual std::shared_ptr<JobControl> Hold() = 0;
  // Entry points, called holding no lock. Move asks the re-home callback for a worker (it may
  // block) and moves there; `forced`: the old worker failed, so the job fails when no worker
  // can take it.
  virtual void Move(absl::Status cause, bool forced) = 0;
  // The backoff after RESOURCE_EXHAUSTED of Run `generation` is over: send the work again, or
  // (`move`) look for another worker first.
  virtual void Retry(uint64_t generation, bool move) = 0;

 protected:
  ~JobControl() = default;

 private:
  virtual void End(arbor::v1::FinishReason reason, std::string error) = 0;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_JOB_CONTROL_H_
