#include "worker/registration.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "base/log_fields.h"

namespace arbor::worker {
namespace {

constexpr absl::Duration kRpcTimeout = absl::Seconds(5);

void SetDeadline(grpc::ClientContext& context) {
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(kRpcTimeout));
}

}  // namespace

Registration::Registration(RegistrationOptions options)
    : options_(std::move(options)),
      stub_(arbor::v1::Cluster::NewStub(
          grpc::CreateChannel(options_.coordinator, grpc::InsecureChannelCredentials()))),
      thread_([this] { Loop(); }) {}

Registration::~Registration() {
  stop_.Notify();
  thread_.join();
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
  if (response.drain() && !drain_signalled_) {
    drain_signalled_ = true;
    spdlog::info("coordinator asked this worker to drain");
    if (options_.on_drain) options_.on_drain();
  }
  return true;
}

}  // namespace arbor::worker
