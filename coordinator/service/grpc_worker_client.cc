#include "coordinator/service/grpc_worker_client.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/log_fields.h"
#include "rpc/grpc_status.h"

namespace arbor::coordinator {
namespace {

// Everything one asynchronous call needs, alive until its completion runs.
template <typename Request, typename Response>
struct Call {
  grpc::ClientContext context;
  Request request;
  Response response;
};

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  if (timeout == absl::InfiniteDuration()) return;
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
}

// The job's cancel becomes the call's: the worker sees its call cancelled at its next step. The
// context may be gone by then (the call ended), and then there is nothing to stop.
void StopOnCancel(RunCancellation& cancel, const std::shared_ptr<grpc::ClientContext>& context) {
  cancel.OnCancel([weak = std::weak_ptr<grpc::ClientContext>(context)] {
    if (std::shared_ptr<grpc::ClientContext> live = weak.lock()) live->TryCancel();
  });
}

}  // namespace

GrpcWorkerClient::GrpcWorkerClient(const WorkerHandle& handle, absl::Duration release_timeout)
    : worker_id_(handle.worker_id),
      stub_(handle.stub),
      incarnation_(handle.incarnation),
      owner_epoch_(handle.owner_epoch),
      release_timeout_(release_timeout) {}

absl::Status GrpcWorkerClient::Runs::Ended(const void* call, const grpc::Status& status,
                                           const std::string& worker) {
  bool was_abandoned = false;
  {
    absl::MutexLock lock(&mu);
    contexts.erase(call);
    was_abandoned = abandoned;
  }
  if (status.error_code() == grpc::StatusCode::CANCELLED && was_abandoned) {
    return absl::UnavailableError(
        absl::StrCat("worker ", worker, " presumed dead: its run was abandoned"));
  }
  return rpc::FromGrpcStatus(status);
}

// Worker.RunStream's client side: progress goes to the job as it is read, the final response
// to `done` when the call ends. Deletes itself in OnDone, after every other reaction.
class GrpcWorkerClient::StreamedRun final : public grpc::ClientReadReactor<arbor::v1::RunUpdate> {
 public:
  StreamedRun(std::shared_ptr<Runs> runs, std::string worker, RunCallback done,
              ProgressCallback progress)
      : runs_(std::move(runs)),
        worker_(std::move(worker)),
        done_(std::move(done)),
        progress_(std::move(progress)) {}

  void Start(arbor::v1::Worker::StubInterface& stub, arbor::v1::RunRequest request,
             absl::Duration timeout, RunCancellation& cancel) {
    request_ = std::move(request);
    SetDeadline(*context_, timeout);
    {
      absl::MutexLock lock(&runs_->mu);
      runs_->contexts[this] = context_;
    }
    stub.async()->RunStream(context_.get(), &request_, this);
    // The call may end, and delete this, as soon as it starts.
    const std::shared_ptr<grpc::ClientContext> context = context_;
    StartRead(&update_);
    StartCall();
    StopOnCancel(cancel, context);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // The stream ended: OnDone follows.
    if (update_.has_progress()) {
      progress_(update_.progress());
    } else if (update_.has_response()) {
      response_ = std::move(*update_.mutable_response());
    }
    StartRead(&update_);
  }

  void OnDone(const grpc::Status& status) override {
    std::unique_ptr<StreamedRun> owned(this);
    absl::Status ended = runs_->Ended(this, status, worker_);
    if (ended.ok() && !response_) {
      ended = absl::InternalError(
          absl::StrCat("worker ", worker_, " ended a streamed run without its response"));
    }
    if (ended.ok()) {
      done_(*std::move(response_));
    } else {
      done_(std::move(ended));
    }
  }

 private:
  const std::shared_ptr<Runs> runs_;
  const std::string worker_;
  const RunCallback done_;
  const ProgressCallback progress_;
  // Shared with runs_, so that AbandonRuns may cancel the call.
  const std::shared_ptr<grpc::ClientContext> context_ = std::make_shared<grpc::ClientContext>();
  arbor::v1::RunRequest request_;
  arbor::v1::RunUpdate update_;
  std::optional<arbor::v1::RunResponse> response_;
};

void GrpcWorkerClient::Run(arbor::v1::RunRequest request, absl::Duration timeout, RunCallback done,
                           ProgressCallback progress, std::shared_ptr<RunCancellation> cancel) {
  request.set_owner_epoch(owner_epoch_);
  if (!progress) return UnaryRun(std::move(request), timeout, std::move(done), *cancel);
  auto* call = new StreamedRun(runs_, worker_id_, std::move(done), std::move(progress));
  call->Start(*stub_, std::move(request), timeout, *cancel);
}

void GrpcWorkerClient::UnaryRun(arbor::v1::RunRequest request, absl::Duration timeout,
                                RunCallback done, RunCancellation& cancel) {
  // The context is shared with runs_, so that AbandonRuns may cancel it while the completion
  // frees the rest of the call.
  struct RunCall {
    std::shared_ptr<grpc::ClientContext> context = std::make_shared<grpc::ClientContext>();
    arbor::v1::RunRequest request;
    arbor::v1::RunResponse response;
  };
  auto* call = new RunCall();
  call->request = std::move(request);
  SetDeadline(*call->context, timeout);
  {
    absl::MutexLock lock(&runs_->mu);
    runs_->contexts[call] = call->context;
  }
  // The completion may free the call before Run returns.
  const std::shared_ptr<grpc::ClientContext> context = call->context;
  stub_->async()->Run(
      call->context.get(), &call->request, &call->response,
      [runs = runs_, worker = worker_id_, call, done = std::move(done)](grpc::Status status) {
        std::unique_ptr<RunCall> owned(call);
        absl::Status ended = runs->Ended(call, status, worker);
        if (ended.ok()) {
          done(std::move(owned->response));
        } else {
          done(std::move(ended));
        }
      });
  StopOnCancel(cancel, context);
}

void GrpcWorkerClient::AbandonRuns() {
  std::vector<std::shared_ptr<grpc::ClientContext>> contexts;
  {
    absl::MutexLock lock(&runs_->mu);
    runs_->abandoned = true;
    for (const auto& [call, context] : runs_->contexts) contexts.push_back(context);
  }
  // Outside the lock: a cancelled call's completion takes it.
  for (const std::shared_ptr<grpc::ClientContext>& context : contexts) context->TryCancel();
}

void GrpcWorkerClient::Release(std::vector<uint64_t> sequence_ids) {
  if (sequence_ids.empty()) return;
  auto* call = new Call<arbor::v1::ReleaseRequest, arbor::v1::ReleaseResponse>();
  for (uint64_t id : sequence_ids) call->request.add_sequence_ids(id);
  call->request.set_owner_epoch(owner_epoch_);
  SetDeadline(call->context, release_timeout_);
  stub_->async()->Release(
      &call->context, &call->request, &call->response,
      [call, worker = worker_id_](grpc::Status status) {
        std::unique_ptr<Call<arbor::v1::ReleaseRequest, arbor::v1::ReleaseResponse>> owned(call);
        if (!status.ok()) {
          base::WithFields({{"worker", worker}, {"event", "release_failed"}})
              .Warn("release failed: {}", status.error_message());
        }
      });
}

}  // namespace arbor::coordinator
