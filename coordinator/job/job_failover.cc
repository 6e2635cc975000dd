// Job failover: moving a job to another worker when its worker fails, runs out of KV or
// drains — wait with backoff where waiting helps (KV frees up, a worker comes back), bounded by
// the deadline and JobOptions::max_wait, then re-home and re-prefill the committed path (and any
// live rollouts) there. Part of class Job (job.h); split from job.cc by concept.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/log_fields.h"
#include "coordinator/job/job.h"

namespace arbor::coordinator {
namespace {

bool Retriable(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
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
  std::shared_ptr<WorkerClient> abandon;
  {
    absl::MutexLock lock(&mu_);
    if (life_.ended() || session_.moving()) return;
    if (session_.in_flight()) {
      // A dead worker's Run is not awaited: a frozen one answers only when (if ever) it
      // resumes. Abandoned, it fails with UNAVAILABLE, and the job moves as after any failure.
      if (absl::IsUnavailable(reason)) abandon = session_.in_flight()->worker;
      session_.DeferMove(std::move(reason));
    } else {
      RequestMove(std::move(reason), /*forced=*/false);
    }
  }
  if (abandon != nullptr) abandon->AbandonRuns();
  actions_.Drain();
}

void Job::Move(absl::Status cause, bool forced) {
  std::shared_ptr<WorkerClient> from;
  {
    absl::MutexLock lock(&mu_);
    if (life_.ended()) return;
    from = session_.worker();
  }
  absl::StatusOr<std::shared_ptr<WorkerClient>> next = env_.rehome(*from, cause);
  {
    absl::MutexLock lock(&mu_);
    if (life_.ended()) {
      session_.MoveAbandoned();
      return;
    }
    if (!next.ok() || *next == nullptr) {
      const absl::Status why =
          next.ok() ? absl::UnavailableError("no worker to re-home to") : next.status();
      if (forced) {
        // The job's worker failed and no other can take it now: wait for one (a restarted or
        // new worker registers), still "moving" so that nothing is sent meanwhile.
        absl::StatusOr<absl::Duration> wait =
            env_.schedule_after ? session_.NextWait(why, env_.clock->Now(), spec_.deadline)
                                : absl::StatusOr<absl::Duration>(why);
        if (!wait.ok()) {
          session_.MoveAbandoned();
          Fail(wait.status());
        } else {
          base::WithFields(
              LogFieldsFor("waiting_for_worker", {{"wait_ms", *wait / absl::Milliseconds(1)}}))
              .Info("no worker can take the job: {}", why.ToString());
          actions_.Push([schedule = env_.schedule_after, job = weak_from_this(), wait = *wait,
                         cause, forced] {
            schedule(wait, [job, cause, forced] {
              if (std::shared_ptr<Job> self = job.lock()) self->Move(cause, forced);
            });
          });
        }
      } else {
        session_.MoveAbandoned();
        base::WithFields(LogFieldsFor("rehome_failed"))
            .Warn("job stays on its worker: {}", why.ToString());
        if (life_.running()) Continue();
      }
    } else {
      // Best effort: a worker that only ran out of KV still holds our sequences.
      ResetSequences();
      session_.MovedTo(*next);
      arbor::v1::GenerateEvent event;
      event.mutable_rehomed()->set_from_worker(from->id());
      event.mutable_rehomed()->set_to_worker(session_.worker()->id());
      event.mutable_rehomed()->set_reason(cause.ToString());
      output_.Send(std::move(event));
      base::WithFields(LogFieldsFor("rehomed", {{"from_worker", from->id()}}))
          .Info("job re-homed: {}", cause.ToString());
      if (life_.running()) Continue();
    }
  }
  actions_.Drain();
}

void Job::ResetSequences() {
  Release(LiveSequences());
  main_.Reset(tree_.SequenceTokenIds());
  if (branch_) branch_->Reprefill(tree_);
}

void Job::Retry(uint64_t generation, bool move) {
  {
    absl::MutexLock lock(&mu_);
    // Nothing happened since the failure (no cancel, no other run, no move).
    if (life_.ended() || session_.in_flight() || session_.moving() ||
        generation != session_.generation()) {
      return;
    }
    if (move) {
      RequestMove(absl::ResourceExhaustedError("worker KV cache full"), /*forced=*/false);
    } else {
      Continue();
    }
  }
  actions_.Drain();
}

void Job::WaitForKv(const absl::Status& status) {
  absl::StatusOr<absl::Duration> wait =
      session_.NextWait(status, env_.clock->Now(), spec_.deadline);
  if (!wait.ok()) return Fail(wait.status());
  // Hand back what the job holds: jobs that each hold part of the KV and wait for more would
  // wait for each other forever. Full blocks stay in the worker's prefix cache, so the retry is
  // mostly cache hits; the backoff keeps this Release ahead of the retry's Run.
  ResetSequences();
  // After a few tries here, look for a worker with room (the job stays when there is none).
  const bool move = session_.CountExhausted();
  base::WithFields(LogFieldsFor("kv_wait", {{"retry", session_.exhausted_retries()},
                                            {"wait_ms", *wait / absl::Milliseconds(1)}}))
      .Info("worker out of KV: {}; retry in {}", status.ToString(), absl::FormatDuration(*wait));
  actions_.Push([schedule = env_.schedule_after, job = weak_from_this(), wait = *wait,
                 generation = session_.generation(), move] {
    schedule(wait, [job, generation, move] {
      if (std::shared_ptr<Job> self = job.lock()) self->Retry(generation, move);
    });
  });
}

void Job::ShrinkSearch(const absl::Status& status) {
  absl::StatusOr<BranchResolution> abandoned = tree_.AbandonBranch(branch_->point());
  if (!abandoned.ok()) return Fail(abandoned.status());
  std::vector<uint64_t> released;
  for (uint64_t id : branch_->Sequences()) {
    if (id != main_.id()) released.push_back(id);
  }
  Release(std::move(released));
  branch_.reset();
  const int width = static_cast<int>(abandoned->candidates.size());
  const int cap = planner_->Shrink(width);
  const std::string reason =
      absl::StrCat("abandoned: the worker's KV cache cannot hold ", width, " rollouts (",
                   status.message(), "); ",
                   cap >= 2 ? absl::StrCat("later forks take at most ", cap)
                            : std::string("the job goes on without branching"));
  output_.SendResolved(*abandoned, {}, reason);
  base::WithFields(LogFieldsFor("search_shrunk", {{"fork_width_cap", cap}}))
      .Warn("branch {}", reason);
  Fallback();
}

void Job::HandleFailure(const absl::Status& status) {
  if (env_.clock->Now() >= spec_.deadline) return Finish(arbor::v1::FINISH_REASON_DEADLINE);
  if (status.code() == absl::StatusCode::kNotFound) return Reprefill(status);
  if (!Retriable(status.code())) return Fail(status);
  if (status.code() == absl::StatusCode::kResourceExhausted && branch_) {
    return ShrinkSearch(status);
  }
  if (status.code() == absl::StatusCode::kResourceExhausted && env_.schedule_after) {
    return WaitForKv(status);
  }
  if (absl::Status gave_up = session_.CountFailure(status); !gave_up.ok()) return Fail(gave_up);
  base::WithFields(LogFieldsFor("worker_failed"))
      .Warn("worker failed the job: {}", status.ToString());
  RequestMove(status, /*forced=*/true);
}

void Job::Reprefill(const absl::Status& status) {
  // Runs name only sequences this job created, so NOT_FOUND means the worker let them go: it
  // released this coordinator's epoch after the lease lapsed (we were unreachable) or it is a
  // new process on the same address. The worker is fine; prefill the job there again (full
  // blocks are likely still in its prefix cache). Bounded like other failures, in case a worker
  // keeps forgetting.
  if (absl::Status gave_up = session_.CountFailure(status); !gave_up.ok()) return Fail(gave_up);
  base::WithFields(LogFieldsFor("reprefill"))
      .Warn("worker no longer holds the job's sequences: {}", status.ToString());
  ResetSequences();
  session_.CountReprefill();
  Continue();
}

void Job::RequestMove(absl::Status cause, bool forced) {
  if (!session_.StartMove()) return;
  // The re-home callback may block (routing, dialling): call it outside the lock.
  actions_.Push(
      [self = shared_from_this(), cause = std::move(cause), forced] { self->Move(cause, forced); });
}

}  // namespace arbor::coordinator
