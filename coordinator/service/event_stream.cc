#include "coordinator/service/event_stream.h"

#include <utility>

#include "rpc/grpc_status.h"

namespace arbor::coordinator {

EventStream::EventStream(std::shared_ptr<JobRecord> record, bool owns_job)
    : record_(std::move(record)), owns_job_(owns_job) {
  subscription_ = record_->events.Subscribe([this](const arbor::v1::GenerateEvent& e) { Push(e); });
}

void EventStream::Push(const arbor::v1::GenerateEvent& event) {
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_ || finished_) return;
    if (writing_) {
      queue_.push_back(event);
      return;
    }
    writing_ = true;
    current_ = event;
  }
  // Only the thread that set writing_ starts a write, and current_ stays put until it is done.
  StartWrite(&current_);
}

void EventStream::OnWriteDone(bool ok) {
  {
    absl::MutexLock lock(&mu_);
    if (!ok) {  // The call is gone (cancelled or broken); OnCancel handles the job.
      writing_ = false;
      return FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "the stream was closed"));
    }
    if (current_.has_finished()) {
      writing_ = false;
      return FinishOnce(grpc::Status::OK);
    }
    if (cancelled_ || queue_.empty()) {
      writing_ = false;
      if (cancelled_) FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
      return;
    }
    current_ = std::move(queue_.front());
    queue_.pop_front();
  }
  StartWrite(&current_);
}

void EventStream::OnCancel() {
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    queue_.clear();
    if (!writing_) FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }
  // Outside our lock: the job's finished event comes back through Push, which drops it now.
  if (owns_job_) record_->job->Cancel();
}

void EventStream::OnDone() {
  record_->events.Unsubscribe(subscription_);  // No Push after this returns.
  delete this;
}

void EventStream::FinishOnce(grpc::Status status) {
  if (finished_) return;
  finished_ = true;
  Finish(std::move(status));
}

FailedStream::FailedStream(const absl::Status& status) { Finish(rpc::ToGrpcStatus(status)); }

}  // namespace arbor::coordinator
