// The Cluster service (coordinator/cluster/cluster_service.h) driven by a sequence of requests
// built from fuzzer bytes, over a fresh WorkerPool per input with a fake clock. Each record is one
// byte choosing the call, two bytes (little-endian) of length, then the request message:
// RegisterWorker, Heartbeat, DrainWorker, DeregisterWorker, UndrainWorker, ListWorkers, a
// monitor pass after the clock moves (workers go silent and die), or a job routed and left.
// Every call must answer OK or a refusal whose message names what was wrong; after every call
// the pool's listing must hold only well-formed, distinct ids and addresses, and a worker that
// just registered must be known to its next heartbeat.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "arbor/v1/cluster.pb.h"
#include "base/fake_clock.h"
#include "coordinator/cluster/cluster_service.h"
#include "coordinator/cluster/worker_names.h"
#include "google/protobuf/stubs/logging.h"
#include "grpcpp/server_context.h"

namespace {

using arbor::base::FakeClock;
using arbor::coordinator::ClusterService;
using arbor::coordinator::WorkerPool;

void CheckStatus(const grpc::Status& status) {
  if (status.ok()) return;
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::FAILED_PRECONDITION:
      break;
    default:
      std::abort();
  }
  if (status.error_message().find(':') == std::string::npos) std::abort();
}

void CheckListing(ClusterService& service, const WorkerPool& pool) {
  grpc::ServerContext context;
  arbor::v1::ListWorkersRequest request;
  arbor::v1::ListWorkersResponse response;
  if (!service.ListWorkers(&context, &request, &response).ok()) std::abort();
  std::set<std::string> ids, addresses;
  int ready = 0;
  for (const arbor::v1::WorkerStatus& worker : response.workers()) {
    if (!ids.insert(worker.worker_id()).second) std::abort();
    if (!addresses.insert(worker.address()).second) std::abort();
    if (!arbor::coordinator::CheckWorkerAddress(worker.address(), "address").ok()) std::abort();
    if (worker.worker_id() != worker.address() &&
        !arbor::coordinator::CheckWorkerId(worker.worker_id(), "worker_id").ok()) {
      std::abort();
    }
    ready += worker.state() == arbor::v1::WORKER_STATE_READY ? 1 : 0;
  }
  if (ready != pool.ready_count()) std::abort();
}

template <typename Message>
bool Parse(const uint8_t* data, size_t size, Message* message) {
  return message->ParseFromArray(data, static_cast<int>(size));
}

// One call of `method` with the request parsed from `body` (none when it does not parse).
template <typename Request, typename Response>
void Call(ClusterService& service,
          grpc::Status (ClusterService::*method)(grpc::ServerContext*, const Request*, Response*),
          const uint8_t* body, size_t length) {
  Request request;
  Response response;
  grpc::ServerContext context;
  if (Parse(body, length, &request)) CheckStatus((service.*method)(&context, &request, &response));
}

// RegisterWorker; a registration that succeeds must be known to the worker's next heartbeat.
void Register(ClusterService& service, const uint8_t* body, size_t length) {
  arbor::v1::RegisterWorkerRequest request;
  arbor::v1::RegisterWorkerResponse response;
  grpc::ServerContext context;
  if (!Parse(body, length, &request)) return;
  const grpc::Status status = service.RegisterWorker(&context, &request, &response);
  CheckStatus(status);
  if (!status.ok()) return;
  if (response.coordinator_epoch() != 7 || response.heartbeat_interval_ms() <= 0) std::abort();
  arbor::v1::HeartbeatRequest beat;
  beat.set_worker_id(response.worker_id());
  arbor::v1::HeartbeatResponse reply;
  grpc::ServerContext beat_context;
  if (!service.Heartbeat(&beat_context, &beat, &reply).ok() || !reply.known()) std::abort();
}

}  // namespace

// Invalid UTF-8 in a string field is a parse failure here; protobuf would also log each one.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FakeClock clock;
  arbor::coordinator::WorkerPoolOptions options;
  options.epoch = 7;
  // Registered workers are never dialled here: no stub is needed.
  WorkerPool pool(options, &clock, [](const std::string&) {
    return std::shared_ptr<arbor::v1::Worker::StubInterface>();
  });
  ClusterService service(&pool, absl::Seconds(2));
  size_t at = 0;
  while (at + 3 <= size) {
    const uint8_t op = data[at];
    const size_t length = std::min<size_t>(data[at + 1] | (data[at + 2] << 8), size - at - 3);
    const uint8_t* body = data + at + 3;
    at += 3 + length;
    switch (op % 8) {
      case 0:
        Register(service, body, length);
        break;
      case 1:
        Call(service, &ClusterService::Heartbeat, body, length);
        break;
      case 2:
        Call(service, &ClusterService::DrainWorker, body, length);
        break;
      case 3:
        Call(service, &ClusterService::DeregisterWorker, body, length);
        break;
      case 4:
        Call(service, &ClusterService::UndrainWorker, body, length);
        break;
      case 5:
        break;  // The listing below.
      case 6:
        clock.Advance(absl::Seconds(length % 16));
        pool.Tick();
        break;
      case 7: {
        std::vector<int32_t> prompt;
        for (size_t i = 0; i < length; ++i) prompt.push_back(body[i]);
        absl::StatusOr<arbor::coordinator::RoutingDecision> routed = pool.RouteJob(prompt, {});
        if (routed.ok()) {
          pool.JobLeft(routed->worker_id);
        } else if (routed.status().code() != absl::StatusCode::kUnavailable) {
          std::abort();
        }
        break;
      }
    }
    CheckListing(service, pool);
  }
  return 0;
}
