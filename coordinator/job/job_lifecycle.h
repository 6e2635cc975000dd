// Where a job stands in its life: QUEUED until started, RUNNING, then ended once — FINISHED,
// CANCELLED or FAILED — with the reason and, for a failure, the error. The job keeps one under
// its lock; an ended job changes no more.
#ifndef ARBOR_COORDINATOR_JOB_JOB_LIFECYCLE_H_
#define ARBOR_COORDINATOR_JOB_JOB_LIFECYCLE_H_

#include <string>
#include <utility>

#include "arbor/v1/generation.pb.h"

namespace arbor::coordinator {

class JobLifecycle {
 public:
  arbor::v1::JobState state() const { return state_; }
  arbor::v1::FinishReason reason() const { return reason_; }
  const std::string& error() const { return error_; }

  bool running() const { return state_ == arbor::v1::JOB_STATE_RUNNING; }
  bool ended() const { return state_ != arbor::v1::JOB_STATE_QUEUED && !running(); }

  // QUEUED → RUNNING; false for a job started or ended already.
  bool Start() {
    if (state_ != arbor::v1::JOB_STATE_QUEUED) return false;
    state_ = arbor::v1::JOB_STATE_RUNNING;
    return true;
  }
  // Ends the job for `reason` (CANCELLED and ERROR have states of their own) and returns the
  // word for it in logs: "finished", "cancelled" or "failed".
  const char* End(arbor::v1::FinishReason reason, std::string error) {
    state_ = reason == arbor::v1::FINISH_REASON_CANCELLED ? arbor::v1::JOB_STATE_CANCELLED
             : reason == arbor::v1::FINISH_REASON_ERROR   ? arbor::v1::JOB_STATE_FAILED
                                                          : arbor::v1::JOB_STATE_FINISHED;
    reason_ = reason;
    error_ = std::move(error);
    return state_ == arbor::v1::JOB_STATE_CANCELLED ? "cancelled"
           : state_ == arbor::v1::JOB_STATE_FAILED  ? "failed"
                                                    : "finished";
  }

 private:
  arbor::v1::JobState state_ = arbor::v1::JOB_STATE_QUEUED;
  arbor::v1::FinishReason reason_ = arbor::v1::FINISH_REASON_UNSPECIFIED;
  std::string error_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_JOB_LIFECYCLE_H_
