#include "coordinator/service/event_stream.h"

#include <utility>

#include "rpc/grpc_status.h"

namespace arbor::coordinator {

EventStream::EventStream(std::shared_ptr<EventLog> events, std::shared_ptr<Job> owned_job,
                         int64_t skip)
    : events_(std::move(events)), owned_job_(std::move(owned_job)), skip_(skip) {
  subscription_ = events_->Subscribe([this](const arbor::v1::GenerateEvent& e) { Push(e); });
}

EventStream* EventStream::OpenStored(const std::vector<arbor::v1::GenerateEvent>& events,
                                     int64_t skip) {
  auto log = std::make_shared<EventLog>();
  for (const arbor::v1::GenerateEvent& event : events) log->Append(event);
  return new EventStream(std::move(log), nullptr, skip);
}

void EventStream::Push(const arbor::v1::GenerateEvent& event) {
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_ || finished_) return;
    if (skip_ > 0) {
      --skip_;
      // The client has every event: nothing was written, so the call can end now.
      if (event.has_finished()) FinishOnce(grpc::Status::OK);
      return;
    }
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
  if (owned_job_ != nullptr) owned_job_->Cancel();
}

void EventStream::OnDone() {
  events_->Unsubscribe(subscription_);  // No Push after this returns.
  delete this;
}

void EventStream::FinishOnce(grpc::Status status) {
  if (finished_) return;
  finished_ = true;
  Finish(std::move(status));
}

FailedStream::FailedStream(const absl::Status& status) { Finish(rpc::ToGrpcStatus(status)); }

}  // namespace arbor::coordinator
