#include "worker/service/registration.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/log_fields.h"
#include "rpc/security.h"

namespace arbor::worker {
namespace {

constexpr absl::Duration kRpcTimeout = absl::Seconds(5);

void SetDeadline(grpc::ClientContext& context) {
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(kRpcTimeout));
}

}  // namespace

Registration::Registration(RegistrationOptions options)
    : options_(std::move(options)),
      stub_(arbor::v1::Cluster::NewStub(rpc::ProcessSecurity().Dial(options_.coordinator))),
      thread_([this] { Loop(); }) {}

Registration::~Registration() { Stop(); }

void Registration::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void Registration::Leave(absl::Duration timeout) {
  Stop();  // The loop's thread owned worker_id_ until now.
  if (worker_id_.empty()) return;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
  arbor::v1::DeregisterWorkerRequest request;
  request.set_worker_id(worker_id_);
  request.set_instance_id(options_.info.instance_id());
  arbor::v1::DeregisterWorkerResponse response;
  const grpc::Status status = stub_->DeregisterWorker(&context, request, &response);
  if (status.ok()) {
    spdlog::info("deregistered from coordinator {}; {} jobs move elsewhere", options_.coordinator,
                 response.jobs_moving());
  } else {
    spdlog::warn("cannot deregister from coordinator {}: {}", options_.coordinator,
                 status.error_message());
  }
  worker_id_.clear();
}

void Registration::Loop() {
  bool registered = false;
  while (!stop_.HasBeenNotified()) {
    if (!registered)
      registered = Register();
    else
      registered = Beat();
    stop_.WaitForNotificationWithTimeout(registered ? interval_ : options_.retry_interval);
  }
}

bool Registration::Register() {
  grpc::ClientContext context;
  SetDeadline(context);
  arbor::v1::RegisterWorkerRequest request;
  request.set_address(options_.advertise);
  *request.mutable_info() = options_.info;
  arbor::v1::RegisterWorkerResponse response;
  grpc::Status status = stub_->RegisterWorker(&context, request, &response);
  if (!status.ok()) {
    spdlog::warn("cannot register with coordinator {}: {} (retrying)", options_.coordinator,
                 status.error_message());
    return false;
  }
  worker_id_ = response.worker_id();
  if (epoch_ != 0 && response.coordinator_epoch() != epoch_ && options_.on_coordinator_replaced) {
    options_.on_coordinator_replaced(epoch_);
  }
  epoch_ = response.coordinator_epoch();
  if (options_.on_coordinator_alive) options_.on_coordinator_alive(epoch_);
  interval_ = absl::Milliseconds(std::clamp(response.heartbeat_interval_ms(), 100, 60000));
  // The coordinator may give another id than the one asked for (when that one is taken).
  base::SetProcessLogFields({{"worker", worker_id_}});
  spdlog::info("registered with coordinator {} as {}", options_.coordinator, worker_id_);
  return true;
}

bool Registration::Beat() {
  grpc::ClientContext context;
  SetDeadline(context);
  arbor::v1::HeartbeatRequest request;
  request.set_worker_id(worker_id_);
  if (options_.load) *request.mutable_load() = options_.load();
  arbor::v1::HeartbeatResponse response;
  grpc::Status status = stub_->Heartbeat(&context, request, &response);
  if (!status.ok() || !response.known()) {
    spdlog::warn("heartbeat to {} failed ({}); registering again", options_.coordinator,
                 status.ok() ? "unknown worker" : status.error_message());
    return false;
  }
  if (options_.on_coordinator_alive) options_.on_coordinator_alive(response.coordinator_epoch());
  if (response.drain() && !drain_signalled_) {
    drain_signalled_ = true;
    spdlog::info("coordinator asked this worker to drain");
    if (options_.on_drain) options_.on_drain();
  } else if (!response.drain() && drain_signalled_) {
    drain_signalled_ = false;
    spdlog::info("coordinator undrained this worker");
    if (options_.on_undrain) options_.on_undrain();
  }
  return true;
}

}  // namespace arbor::worker
