// Job failover: moving a job to another worker when its worker fails, runs out of KV or
// drains — retry with backoff where waiting helps, then re-home and re-prefill the committed path
// (and any live rollouts) there. Part of class Job (job.h); split from job.cc by concept.
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/log_fields.h"
#include "coordinator/job.h"

namespace arbor::coordinator {
namespace {

bool Retriable(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnimplemented:
      return false;  // The request was wrong: another worker would refuse it too.
    default:
      return true;
  }
}

}  // namespace

void Job::Rehome(absl::Status reason) {
  {
    absl::MutexLock lock(&mu_);
    if (finished() || moving_) return;
    if (in_flight_) {
      if (!pending_move_) pending_move_ = std::move(reason);
    } else {
      RequestMove(std::move(reason), /*forced=*/false);
    }
  }
  Drain();
}

void Job::Move(absl::Status cause, bool forced) {
  std::string from;
  {
    absl::MutexLock lock(&mu_);
    if (finished()) return;
    from = worker_->id();
  }
  absl::StatusOr<std::shared_ptr<WorkerClient>> next = env_.rehome(from, cause);
  {
    absl::MutexLock lock(&mu_);
    moving_ = false;
    if (finished()) return;
    if (!next.ok() || *next == nullptr) {
      const absl::Status why =
          next.ok() ? absl::UnavailableError("no worker to re-home to") : next.status();
      if (forced) {
        Fail(why);
      } else {
        base::WithFields(LogFieldsFor("rehome_failed"))
            .Warn("job stays on its worker: {}", why.ToString());
        if (state_ == arbor::v1::JOB_STATE_RUNNING) Continue();
      }
    } else {
      // Best effort: a worker that only ran out of KV still holds our sequences.
      Release(LiveSequences());
      worker_ = *next;
      ++rehomed_;
      exhausted_retries_ = 0;
      pending_move_.reset();
      main_live_ = false;
      main_source_ = SequenceSource{};
      main_source_.is_new = true;
      main_source_.append = tree_.SequenceTokenIds();
      if (branch_) {
        ForEachRollout(branch_->children, [this](Child& child) {
          child.source = SequenceSource{};
          child.source.is_new = true;
          child.source.append = PathTokens(child.leaf);
          child.sent = false;
        });
      }
      arbor::v1::GenerateEvent event;
      event.mutable_rehomed()->set_from_worker(from);
      event.mutable_rehomed()->set_to_worker(worker_->id());
      event.mutable_rehomed()->set_reason(cause.ToString());
      Emit(std::move(event));
      base::WithFields(LogFieldsFor("rehomed", {{"from_worker", from}}))
          .Info("job re-homed: {}", cause.ToString());
      if (state_ == arbor::v1::JOB_STATE_RUNNING) Continue();
    }
  }
  Drain();
}

void Job::Retry(uint64_t generation) {
  {
    absl::MutexLock lock(&mu_);
    // Nothing happened since the failure (no cancel, no other run).
    if (finished() || in_flight_ || generation != generation_) return;
    Continue();
  }
  Drain();
}

void Job::HandleFailure(const absl::Status& status) {
  if (env_.clock->Now() >= spec_.deadline) return Finish(arbor::v1::FINISH_REASON_DEADLINE);
  if (!Retriable(status.code())) return Fail(status);
  if (status.code() == absl::StatusCode::kResourceExhausted && env_.schedule_after &&
      exhausted_retries_ < options_.exhausted_retries) {
    // KV frees up as the worker's other sequences finish: wait there before moving.
    const absl::Duration wait = options_.exhausted_backoff * (int64_t{1} << exhausted_retries_);
    ++exhausted_retries_;
    base::WithFields(LogFieldsFor("kv_retry", {{"retry", exhausted_retries_}}))
        .Info("worker out of KV, retry in {}", absl::FormatDuration(wait));
    actions_.push_back(
        [schedule = env_.schedule_after, job = weak_from_this(), wait, generation = generation_] {
          schedule(wait, [job, generation] {
            if (std::shared_ptr<Job> self = job.lock()) self->Retry(generation);
          });
        });
    return;
  }
  if (++consecutive_failures_ > options_.max_consecutive_failures) {
    return Fail(absl::UnavailableError(absl::StrCat("gave up after ", consecutive_failures_,
                                                    " worker failures: ", status.ToString())));
  }
  base::WithFields(LogFieldsFor("worker_failed"))
      .Warn("worker failed the job: {}", status.ToString());
  RequestMove(status, /*forced=*/true);
}

void Job::RequestMove(absl::Status cause, bool forced) {
  if (moving_) return;
  moving_ = true;
  // The re-home callback may block (routing, dialling): call it outside the lock.
  actions_.push_back(
      [self = shared_from_this(), cause = std::move(cause), forced] { self->Move(cause, forced); });
}

}  // namespace arbor::coordinator
