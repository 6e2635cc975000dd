#include "worker/service/run_stream_reactor.h"

#include <utility>

#include "rpc/grpc_status.h"

namespace arbor::worker {
namespace {

// Appends `next`'s steps to `into`, item by item (both answer the same run's items).
void MergeProgress(const v1::RunProgress& next, v1::RunProgress& into) {
  for (int i = 0; i < next.results_size() && i < into.results_size(); ++i) {
    for (const v1::StepResult& step : next.results(i).steps()) {
      *into.mutable_results(i)->add_steps() = step;
    }
  }
}

}  // namespace

RunStreamReactor* RunStreamReactor::Start(grpc::CallbackServerContext* context, Engine* engine,
                                          const v1::RunRequest& request) {
  auto* reactor = new RunStreamReactor();
  // The context stays valid until Finish, which waits for the engine's answer, so the engine
  // may poll it until then.
  engine->Run(
      request, [context] { return context->IsCancelled(); },
      [reactor](absl::StatusOr<v1::RunResponse> result) { reactor->OnResult(std::move(result)); },
      [reactor](v1::RunProgress progress) { reactor->OnProgress(std::move(progress)); });
  return reactor;
}

RunStreamReactor* RunStreamReactor::Refuse(const grpc::Status& status) {
  auto* reactor = new RunStreamReactor();
  {
    absl::MutexLock lock(&reactor->mu_);
    reactor->status_ = status;
  }
  reactor->Pump();
  return reactor;
}

void RunStreamReactor::OnProgress(v1::RunProgress progress) {
  {
    absl::MutexLock lock(&mu_);
    if (broken_) return;
    if (progress_) {
      MergeProgress(progress, *progress_->mutable_progress());
    } else {
      progress_.emplace();
      *progress_->mutable_progress() = std::move(progress);
    }
  }
  Pump();
}

void RunStreamReactor::OnResult(absl::StatusOr<v1::RunResponse> result) {
  {
    absl::MutexLock lock(&mu_);
    if (result.ok()) {
      response_.emplace();
      *response_->mutable_response() = *std::move(result);
      status_ = grpc::Status::OK;
    } else {
      progress_.reset();  // The caller learns the run failed; its steps are undone.
      status_ = rpc::ToGrpcStatus(result.status());
    }
  }
  Pump();
}

void RunStreamReactor::OnWriteDone(bool ok) {
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      broken_ = true;
      progress_.reset();
      response_.reset();
    }
  }
  Pump();
}

void RunStreamReactor::Pump() {
  std::optional<grpc::Status> finish;
  {
    absl::MutexLock lock(&mu_);
    if (writing_ || finished_) return;
    std::optional<v1::RunUpdate>& next = progress_ ? progress_ : response_;
    if (next) {
      in_flight_ = *std::move(next);
      next.reset();
      writing_ = true;
    } else if (status_) {
      finished_ = true;
      finish = broken_ ? grpc::Status(grpc::StatusCode::CANCELLED, "the client stopped reading")
                       : *status_;
    } else {
      return;
    }
  }
  // Outside the lock: either may run a reaction inline, and Finish may delete this.
  if (finish) {
    Finish(*finish);
  } else {
    StartWrite(&in_flight_);
  }
}

}  // namespace arbor::worker
