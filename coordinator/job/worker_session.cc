#include "coordinator/job/worker_session.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace arbor::coordinator {

uint64_t WorkerSession::Sent(std::vector<uint64_t> ids, absl::Time now) {
  in_flight_ = InFlight{++generation_, std::move(ids), worker_, now,
                        std::make_shared<RunCancellation>()};
  return generation_;
}

std::optional<WorkerSession::InFlight> WorkerSession::Completed(uint64_t generation) {
  if (!in_flight_ || in_flight_->generation != generation) return std::nullopt;
  std::optional<InFlight> done = std::move(in_flight_);
  in_flight_.reset();
  return done;
}

absl::Status WorkerSession::CountFailure(const absl::Status& cause) {
  if (++consecutive_failures_ <= policy_.max_consecutive_failures) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("gave up after ", consecutive_failures_,
                                             " worker failures: ", cause.ToString()));
}

void WorkerSession::Succeeded() {
  consecutive_failures_ = 0;
  exhausted_retries_ = 0;
  waiting_since_ = absl::InfiniteFuture();
  waits_ = 0;
}

absl::StatusOr<absl::Duration> WorkerSession::NextWait(const absl::Status& why, absl::Time now,
                                                       absl::Time deadline) {
  if (waiting_since_ == absl::InfiniteFuture()) waiting_since_ = now;
  const absl::Duration waited = now - waiting_since_;
  if (waited >= policy_.max_wait || now >= deadline) {
    return absl::Status(
        why.code(),
        absl::StrCat("gave up after waiting ", absl::FormatDuration(waited), ": ", why.message()));
  }
  absl::Duration wait = policy_.first_backoff;
  for (int i = 0; i < waits_ && wait < policy_.max_backoff; ++i) wait *= 2;
  ++waits_;
  // Never past the deadline: the retry then finishes the job as DEADLINE.
  return std::max(absl::ZeroDuration(), std::min({wait, policy_.max_backoff, deadline - now}));
}

bool WorkerSession::StartMove() {
  if (moving_) return false;
  moving_ = true;
  return true;
}

void WorkerSession::MovedTo(std::shared_ptr<WorkerClient> next) {
  moving_ = false;
  worker_ = std::move(next);
  ++rehomed_;
  exhausted_retries_ = 0;
  deferred_move_.reset();
}

void WorkerSession::DeferMove(absl::Status reason) {
  if (!deferred_move_) deferred_move_ = std::move(reason);
}

std::optional<absl::Status> WorkerSession::TakeDeferredMove() {
  std::optional<absl::Status> reason = std::move(deferred_move_);
  deferred_move_.reset();
  return reason;
}

}  // namespace arbor::coordinator
