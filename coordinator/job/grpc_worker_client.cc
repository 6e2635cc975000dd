#include "coordinator/job/grpc_worker_client.h"

#include <chrono>
#include <utility>

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
  auto* call = new Call<arbor::v1::RunRequest, arbor::v1::RunResponse>();
  call->request = std::move(request);
  call->request.set_owner_epoch(owner_epoch_);
  SetDeadline(call->context, timeout);
  stub_->async()->Run(
      &call->context, &call->request, &call->response,
      [call, done = std::move(done)](grpc::Status status) {
        std::unique_ptr<Call<arbor::v1::RunRequest, arbor::v1::RunResponse>> owned(call);
        if (status.ok()) {
          done(std::move(owned->response));
        } else {
          done(rpc::FromGrpcStatus(status));
        }
      });
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
