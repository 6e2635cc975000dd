#include "coordinator/job/grpc_worker_client.h"

#include <chrono>
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

}  // namespace

GrpcWorkerClient::GrpcWorkerClient(const WorkerHandle& handle, absl::Duration release_timeout)
    : worker_id_(handle.worker_id),
      stub_(handle.stub),
      incarnation_(handle.incarnation),
      owner_epoch_(handle.owner_epoch),
      release_timeout_(release_timeout) {}

void GrpcWorkerClient::Run(arbor::v1::RunRequest request, absl::Duration timeout,
                           RunCallback done) {
  // The context is shared with runs_, so that AbandonRuns may cancel it while the completion
  // frees the rest of the call.
  struct RunCall {
    std::shared_ptr<grpc::ClientContext> context = std::make_shared<grpc::ClientContext>();
    arbor::v1::RunRequest request;
    arbor::v1::RunResponse response;
  };
  auto* call = new RunCall();
  call->request = std::move(request);
  call->request.set_owner_epoch(owner_epoch_);
  SetDeadline(*call->context, timeout);
  {
    absl::MutexLock lock(&runs_->mu);
    runs_->contexts[call] = call->context;
  }
  stub_->async()->Run(
      call->context.get(), &call->request, &call->response,
      [runs = runs_, worker = worker_id_, call, done = std::move(done)](grpc::Status status) {
        std::unique_ptr<RunCall> owned(call);
        bool abandoned = false;
        {
          absl::MutexLock lock(&runs->mu);
          runs->contexts.erase(call);
          abandoned = runs->abandoned;
        }
        if (status.ok()) {
          done(std::move(owned->response));
        } else if (status.error_code() == grpc::StatusCode::CANCELLED && abandoned) {
          done(absl::UnavailableError(
              absl::StrCat("worker ", worker, " presumed dead: its run was abandoned")));
        } else {
          done(rpc::FromGrpcStatus(status));
        }
      });
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
