#include "worker/service/worker_service.h"

#include "rpc/grpc_status.h"
#include "worker/service/run_stream_reactor.h"

namespace arbor::worker {

WorkerService::WorkerService(Engine* engine, v1::WorkerInfo info, SequenceLeases* leases)
    : engine_(engine), info_(std::move(info)), leases_(leases) {}

v1::HealthResponse WorkerService::CurrentHealth() const {
  v1::HealthResponse health = engine_->Health();
  health.set_serving(health.serving() && !draining_);  // Not after a device failure either.
  return health;
}

grpc::ServerUnaryReactor* WorkerService::Info(grpc::CallbackServerContext* context,
                                              const v1::InfoRequest*, v1::WorkerInfo* response) {
  *response = info_;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

namespace {

grpc::Status Draining() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "worker is draining: send new runs to another worker");
}

}  // namespace

grpc::ServerUnaryReactor* WorkerService::Run(grpc::CallbackServerContext* context,
                                             const v1::RunRequest* request,
                                             v1::RunResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Renew(request->owner_epoch());
  if (draining_) {
    reactor->Finish(Draining());
    return reactor;
  }
  // The context stays valid until Finish, and the engine polls `cancelled` only before it
  // calls `done`, so both lambdas may capture it.
  engine_->Run(
      *request, [context] { return context->IsCancelled(); },
      [reactor, response](absl::StatusOr<v1::RunResponse> result) {
        if (result.ok()) *response = *std::move(result);
        reactor->Finish(rpc::ToGrpcStatus(result.status()));
      });
  return reactor;
}

grpc::ServerWriteReactor<v1::RunUpdate>* WorkerService::RunStream(
    grpc::CallbackServerContext* context, const v1::RunRequest* request) {
  Renew(request->owner_epoch());
  if (draining_) return RunStreamReactor::Refuse(Draining());
  return RunStreamReactor::Start(context, engine_, *request);
}

grpc::ServerUnaryReactor* WorkerService::Release(grpc::CallbackServerContext* context,
                                                 const v1::ReleaseRequest* request,
                                                 v1::ReleaseResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Renew(request->owner_epoch());
  engine_->Release({request->sequence_ids().begin(), request->sequence_ids().end()},
                   [reactor, response](int32_t released) {
                     response->set_released(released);
                     reactor->Finish(grpc::Status::OK);
                   });
  return reactor;
}

grpc::ServerUnaryReactor* WorkerService::Health(grpc::CallbackServerContext* context,
                                                const v1::HealthRequest* request,
                                                v1::HealthResponse* response) {
  Renew(request->owner_epoch());
  *response = CurrentHealth();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace arbor::worker
