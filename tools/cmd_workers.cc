// `arbor workers`, `arbor drain WORKER` and `arbor undrain WORKER`: the coordinator's Cluster
// API for operators.
#include <iostream>

#include "absl/strings/str_format.h"
#include "arbor/v1/cluster.grpc.pb.h"
#include "tools/client.h"
#include "tools/commands.h"
#include "tools/kv_usage.h"

namespace arbor::tools {

int ListWorkers(const ClientOptions& client, Output output) {
  auto stub = arbor::v1::Cluster::NewStub(Connect(client.coordinator));
  arbor::v1::ListWorkersResponse response;
  const grpc::Status status = stub->ListWorkers(UnaryContext(client).get(), {}, &response);
  if (!status.ok()) return ReportRpcError(status, "workers", output.err);
  if (client.json) {
    output.out << ToJson(response) << "\n";
    return 0;
  }
  output.out << absl::StrFormat("%-20s %-22s %-9s %5s %6s %8s %-40s %-8s %s\n", "WORKER",
                                "ADDRESS", "STATE", "JOBS", "SEQS", "QUEUED",
                                "KV USED/TOTAL", "BACKEND", "MODEL");
  for (const arbor::v1::WorkerStatus& w : response.workers()) {
    std::string state = arbor::v1::WorkerState_Name(w.state());
    state = state.substr(std::string("WORKER_STATE_").size());
    output.out << absl::StrFormat(
        "%-20s %-22s %-9s %5d %6d %8d %-40s %-8s %s\n", w.worker_id(), w.address(), state,
        w.jobs(), w.load().live_sequences(), w.load().queued_tokens(), KvUsage(w),
        w.info().backend(), w.info().model().name());
    // Why one that answers takes no jobs (it serves another model), and how to fix it.
    if (!w.refused().empty()) output.out << "  refused: " << w.refused() << "\n";
  }
  return 0;
}

int DrainWorker(const ClientOptions& client, const std::string& worker_id, Output output) {
  auto stub = arbor::v1::Cluster::NewStub(Connect(client.coordinator));
  arbor::v1::DrainWorkerRequest request;
  request.set_worker_id(worker_id);
  arbor::v1::DrainWorkerResponse response;
  const grpc::Status status = stub->DrainWorker(UnaryContext(client).get(), request, &response);
  if (!status.ok()) return ReportRpcError(status, "drain " + worker_id, output.err);
  if (client.json) {
    output.out << ToJson(response) << "\n";
  } else {
    output.out << "worker " << worker_id << " draining; " << response.jobs_rehomed()
               << " job(s) being re-homed\n";
  }
  return 0;
}

int UndrainWorker(const ClientOptions& client, const std::string& worker_id, Output output) {
  auto stub = arbor::v1::Cluster::NewStub(Connect(client.coordinator));
  arbor::v1::UndrainWorkerRequest request;
  request.set_worker_id(worker_id);
  arbor::v1::UndrainWorkerResponse response;
  const grpc::Status status = stub->UndrainWorker(UnaryContext(client).get(), request, &response);
  if (!status.ok()) return ReportRpcError(status, "undrain " + worker_id, output.err);
  output.out << (client.json ? ToJson(response) : "worker " + worker_id + " takes jobs again")
             << "\n";
  return 0;
}

int RunWorkers(const Args& args) {
  if (!args.empty()) {
    std::cerr << "usage: arbor workers\n";
    return 2;
  }
  return ListWorkers(ClientOptionsFromFlags(), Output{std::cout, std::cerr});
}

int RunDrain(const Args& args) {
  if (args.size() != 1) {
    std::cerr << "usage: arbor drain WORKER\n";
    return 2;
  }
  return DrainWorker(ClientOptionsFromFlags(), args[0], Output{std::cout, std::cerr});
}

int RunUndrain(const Args& args) {
  if (args.size() != 1) {
    std::cerr << "usage: arbor undrain WORKER\n";
    return 2;
  }
  return UndrainWorker(ClientOptionsFromFlags(), args[0], Output{std::cout, std::cerr});
}

}  // namespace arbor::tools
