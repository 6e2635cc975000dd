#include "coordinator/job/job_failover.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/log_fields.h"

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

void JobFailover::HandleFailure(const absl::Status& status) {
  JobControl& control = *parts_.control;
  if (parts_.clock->Now() >= parts_.spec->deadline) {
    return control.Finish(arbor::v1::FINISH_REASON_DEADLINE);
  }
  if (status.code() == absl::StatusCode::kNotFound) return Reprefill(status);
  if (!Retriable(status.code())) return control.Fail(status);
  if (status.code() == absl::StatusCode::kResourceExhausted && parts_.path->branch_open()) {
    return parts_.path->ShrinkSearch(status);
  }
  if (status.code() == absl::StatusCode::kResourceExhausted && parts_.schedule_after) {
    return WaitForKv(status);
  }
  if (absl::Status gave_up = parts_.session->CountFailure(status); !gave_up.ok()) {
    return control.Fail(gave_up);
  }
  base::WithFields(control.LogFieldsFor("worker_failed", {}))
      .Warn("worker failed the job: {}", status.ToString());
  RequestMove(status, /*forced=*/true);
}

std::shared_ptr<WorkerClient> JobFailover::Rehome(absl::Status reason) {
  WorkerSession& session = *parts_.session;
  if (parts_.life->ended() || session.moving()) return nullptr;
  if (!session.in_flight()) {
    RequestMove(std::move(reason), /*forced=*/false);
    return nullptr;
  }
  // A dead worker's Run is not awaited: a frozen one answers only when (if ever) it resumes.
  // Abandoned, it fails with UNAVAILABLE, and the job moves as after any failure.
  std::shared_ptr<WorkerClient> abandon;
  if (absl::IsUnavailable(reason)) abandon = session.in_flight()->worker;
  session.DeferMove(std::move(reason));
  return abandon;
}

void JobFailover::RequestMove(absl::Status cause, bool forced) {
  if (!parts_.session->StartMove()) return;
  // The re-home callback may block (routing, dialling): Move calls it outside the lock.
  parts_.actions->Push([job = parts_.control->Hold(), cause = std::move(cause), forced] {
    job->Move(cause, forced);
  });
}

void JobFailover::Moved(const WorkerClient& from,
                        absl::StatusOr<std::shared_ptr<WorkerClient>> next,
                        const absl::Status& cause, bool forced) {
  JobControl& control = *parts_.control;
  WorkerSession& session = *parts_.session;
  if (!next.ok() || *next == nullptr) {
    const absl::Status why =
        next.ok() ? absl::UnavailableError("no worker to re-home to") : next.status();
    if (forced) return WaitForWorker(why, cause, forced);
    session.MoveAbandoned();
    base::WithFields(control.LogFieldsFor("rehome_failed", {}))
        .Warn("job stays on its worker: {}", why.ToString());
    if (parts_.life->running()) control.Continue();
    return;
  }
  // Best effort: a worker that only ran out of KV still holds our sequences.
  parts_.path->ResetSequences();
  session.MovedTo(*next);
  arbor::v1::GenerateEvent event;
  event.mutable_rehomed()->set_from_worker(from.id());
  event.mutable_rehomed()->set_to_worker(session.worker()->id());
  event.mutable_rehomed()->set_reason(cause.ToString());
  parts_.output->Send(std::move(event));
  base::WithFields(control.LogFieldsFor("rehomed", {{"from_worker", from.id()}}))
      .Info("job re-homed: {}", cause.ToString());
  if (parts_.life->running()) control.Continue();
}

void JobFailover::WaitForWorker(const absl::Status& why, const absl::Status& cause, bool forced) {
  // The job's worker failed and no other can take it now: wait for one (a restarted or new
  // worker registers), still "moving" so that nothing is sent meanwhile.
  absl::StatusOr<absl::Duration> wait =
      parts_.schedule_after
          ? parts_.session->NextWait(why, parts_.clock->Now(), parts_.spec->deadline)
          : absl::StatusOr<absl::Duration>(why);
  if (!wait.ok()) {
    parts_.session->MoveAbandoned();
    return parts_.control->Fail(wait.status());
  }
  base::WithFields(parts_.control->LogFieldsFor("waiting_for_worker",
                                                {{"wait_ms", *wait / absl::Milliseconds(1)}}))
      .Info("no worker can take the job: {}", why.ToString());
  parts_.actions->Push([schedule = parts_.schedule_after,
                        job = std::weak_ptr<JobControl>(parts_.control->Hold()), wait = *wait,
                        cause, forced] {
    schedule(wait, [job, cause, forced] {
      if (std::shared_ptr<JobControl> self = job.lock()) self->Move(cause, forced);
    });
  });
}

bool JobFailover::Retry(uint64_t generation, bool move) {
  const WorkerSession& session = *parts_.session;
  // Nothing happened since the failure (no cancel, no other run, no move).
  if (parts_.life->ended() || session.in_flight() || session.moving() ||
      generation != session.generation()) {
    return false;
  }
  if (move) {
    RequestMove(absl::ResourceExhaustedError("worker KV cache full"), /*forced=*/false);
  } else {
    parts_.control->Continue();
  }
  return true;
}

void JobFailover::WaitForKv(const absl::Status& status) {
  WorkerSession& session = *parts_.session;
  absl::StatusOr<absl::Duration> wait =
      session.NextWait(status, parts_.clock->Now(), parts_.spec->deadline);
  if (!wait.ok()) return parts_.control->Fail(wait.status());
  // Hand back what the job holds: jobs that each hold part of the KV and wait for more would
  // wait for each other forever. Full blocks stay in the worker's prefix cache, so the retry is
  // mostly cache hits; the backoff keeps this Release ahead of the retry's Run.
  parts_.path->ResetSequences();
  // After a few tries here, look for a worker with room (the job stays when there is none).
  const bool move = session.CountExhausted();
  base::WithFields(
      parts_.control->LogFieldsFor("kv_wait", {{"retry", session.exhausted_retries()},
                                               {"wait_ms", *wait / absl::Milliseconds(1)}}))
      .Info("worker out of KV: {}; retry in {}", status.ToString(), absl::FormatDuration(*wait));
  parts_.actions->Push([schedule = parts_.schedule_after,
                        job = std::weak_ptr<JobControl>(parts_.control->Hold()), wait = *wait,
                        generation = session.generation(), move] {
    schedule(wait, [job, generation, move] {
      if (std::shared_ptr<JobControl> self = job.lock()) self->Retry(generation, move);
    });
  });
}

void JobFailover::Reprefill(const absl::Status& status) {
  // Runs name only sequences this job created, so NOT_FOUND means the worker let them go: it
  // released this coordinator's epoch after the lease lapsed (we were unreachable) or it is a
  // new process on the same address. The worker is fine; prefill the job there again (full
  // blocks are likely still in its prefix cache). Bounded like other failures, in case a worker
  // keeps forgetting.
  if (absl::Status gave_up = parts_.session->CountFailure(status); !gave_up.ok()) {
    return parts_.control->Fail(gave_up);
  }
  base::WithFields(parts_.control->LogFieldsFor("reprefill", {}))
      .Warn("worker no longer holds the job's sequences: {}", status.ToString());
  parts_.path->ResetSequences();
  parts_.session->CountReprefill();
  parts_.control->Continue();
}

}  // namespace arbor::coordinator
