#include "coordinator/cluster/cluster_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "coordinator/cluster/worker_names.h"
#include "rpc/grpc_status.h"

namespace arbor::coordinator {
namespace {

constexpr int64_t kMinHeartbeatMs = 100;
constexpr int64_t kMaxHeartbeatMs = 60000;

absl::Status Positive(int64_t value, const char* field) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", value, " must be > 0"));
}

}  // namespace

absl::Status ValidateWorkerInfo(const arbor::v1::WorkerInfo& info) {
  // The id the worker reports becomes its id here when it has one (else its address does).
  if (!info.worker_id().empty()) RETURN_IF_ERROR(CheckWorkerId(info.worker_id(), "info.worker_id"));
  // One table instead of a chain of ifs: each value a worker must report as positive.
  const std::pair<int64_t, const char*> positive[] = {
      {info.model().vocab_size(), "info.model.vocab_size"},
      {info.model().max_context(), "info.model.max_context"},
      {info.block_size(), "info.block_size"},
      {info.kv_capacity_tokens(), "info.kv_capacity_tokens"},
  };
  for (const auto& [value, field] : positive) {
    if (absl::Status s = Positive(value, field); !s.ok()) return s;
  }
  for (int i = 0; i < info.model().eos_token_ids_size(); ++i) {
    const int32_t id = info.model().eos_token_ids(i);
    if (id < 0 || id >= info.model().vocab_size()) {
      return absl::InvalidArgumentError(absl::StrCat("info.model.eos_token_ids[", i, "]: ", id,
                                                     " is outside [0, ", info.model().vocab_size(),
                                                     ")"));
    }
  }
  return absl::OkStatus();
}

grpc::Status ClusterService::RegisterWorker(grpc::ServerContext* context,
                                            const arbor::v1::RegisterWorkerRequest* request,
                                            arbor::v1::RegisterWorkerResponse* response) {
  if (absl::Status s = access_.Check(*context, ClusterAccess::Need::kWorker); !s.ok()) {
    return rpc::ToGrpcStatus(s);
  }
  if (absl::Status s = CheckWorkerAddress(request->address(), "address"); !s.ok()) {
    return rpc::ToGrpcStatus(s);
  }
  if (!request->has_info()) {
    return rpc::ToGrpcStatus(absl::InvalidArgumentError("info: required"));
  }
  if (absl::Status s = ValidateWorkerInfo(request->info()); !s.ok()) {
    return rpc::ToGrpcStatus(s);
  }
  // Without an id of its own the worker goes by its address, so that must be a usable id too
  // (its heartbeats name it).
  if (request->info().worker_id().empty()) {
    if (absl::Status s = CheckWorkerId(request->address(),
                                       "address (the worker id when "
                                       "info.worker_id is empty)");
        !s.ok()) {
      return rpc::ToGrpcStatus(s);
    }
  }
  absl::StatusOr<std::string> id = pool_->Register(request->address(), request->info());
  if (!id.ok()) return rpc::ToGrpcStatus(id.status());
  response->set_worker_id(*id);
  response->set_coordinator_epoch(pool_->epoch());
  response->set_heartbeat_interval_ms(static_cast<int32_t>(std::clamp(
      absl::ToInt64Milliseconds(heartbeat_interval_), kMinHeartbeatMs, kMaxHeartbeatMs)));
  return grpc::Status::OK;
}

grpc::Status ClusterService::Heartbeat(grpc::ServerContext* context,
                                       const arbor::v1::HeartbeatRequest* request,
                                       arbor::v1::HeartbeatResponse* response) {
  if (absl::Status s = CheckCaller(*context, ClusterAccess::Need::kWorker, request->worker_id());
      !s.ok()) {
    return rpc::ToGrpcStatus(s);
  }
  const WorkerPool::HeartbeatReply reply = pool_->Heartbeat(request->worker_id(), request->load());
  response->set_known(reply.known);
  response->set_drain(reply.drain);
  response->set_coordinator_epoch(pool_->epoch());
  return grpc::Status::OK;
}

grpc::Status ClusterService::ListWorkers(grpc::ServerContext* context,
                                         const arbor::v1::ListWorkersRequest*,
                                         arbor::v1::ListWorkersResponse* response) {
  if (absl::Status s = access_.Check(*context, ClusterAccess::Need::kRead); !s.ok()) {
    return rpc::ToGrpcStatus(s);
  }
  for (arbor::v1::WorkerStatus& status : pool_->List()) {
    *response->add_workers() = std::move(status);
  }
  return grpc::Status::OK;
}

grpc::Status ClusterService::DrainWorker(grpc::ServerContext* context,
                                         const arbor::v1::DrainWorkerRequest* request,
                                         arbor::v1::DrainWorkerResponse* response) {
  if (absl::Status s = CheckCaller(*context, ClusterAccess::Need::kAdmin, request->worker_id());
      !s.ok()) {
    return rpc::ToGrpcStatus(s);
  }
  absl::StatusOr<int> jobs = pool_->Drain(request->worker_id());
  if (!jobs.ok()) return rpc::ToGrpcStatus(jobs.status());
  response->set_jobs_rehomed(*jobs);
  return grpc::Status::OK;
}

grpc::Status ClusterService::DeregisterWorker(grpc::ServerContext* context,
                                              const arbor::v1::DeregisterWorkerRequest* request,
                                              arbor::v1::DeregisterWorkerResponse* response) {
  if (absl::Status s = CheckCaller(*context, ClusterAccess::Need::kWorker, request->worker_id());
      !s.ok()) {
    return rpc::ToGrpcStatus(s);
  }
  absl::StatusOr<int> jobs = pool_->Deregister(request->worker_id(), request->instance_id());
  if (!jobs.ok()) return rpc::ToGrpcStatus(jobs.status());
  response->set_jobs_moving(*jobs);
  return grpc::Status::OK;
}

grpc::Status ClusterService::UndrainWorker(grpc::ServerContext* context,
                                           const arbor::v1::UndrainWorkerRequest* request,
                                           arbor::v1::UndrainWorkerResponse*) {
  if (absl::Status s = CheckCaller(*context, ClusterAccess::Need::kAdmin, request->worker_id());
      !s.ok()) {
    return rpc::ToGrpcStatus(s);
  }
  return rpc::ToGrpcStatus(pool_->Undrain(request->worker_id()));
}

absl::Status ClusterService::CheckCaller(const grpc::ServerContext& context,
                                         ClusterAccess::Need need,
                                         const std::string& worker_id) const {
  RETURN_IF_ERROR(access_.Check(context, need));
  return CheckWorkerId(worker_id, "worker_id");
}

}  // namespace arbor::coordinator
