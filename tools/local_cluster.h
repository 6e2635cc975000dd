// A coordinator and N workers started as real processes on this machine: what `arbor up` and
// `arbor demo` run, and what integration tests use.
#ifndef ARBOR_TOOLS_LOCAL_CLUSTER_H_
#define ARBOR_TOOLS_LOCAL_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/subprocess.h"

namespace arbor::tools {

struct LocalClusterOptions {
  std::string bin_dir;   // Where arbor-coordinator and arbor-worker live.
  std::string work_dir;  // Port files and logs go here.
  std::string model;     // --model of the workers (weights) and the coordinator (tokenizer).
  int num_workers = 1;
  std::string host = "127.0.0.1";
  int coordinator_port = 0;  // 0: any free port.
  int http_port = -1;        // The coordinator's HTTP API: -1 off, 0 any free port.
  std::string log_level = "warn";
  std::string log_format = "text";        // Or json (base/log_format.h).
  bool worker_metrics = false;            // Each worker serves Prometheus /metrics.
  int worker_metrics_port = 0;  // With worker_metrics: worker i's port is this + i; 0: free ports.
  std::vector<std::string> worker_flags;  // Extra flags for every worker.
  std::vector<std::string> coordinator_flags;  // Extra flags for the coordinator.
  absl::Duration start_timeout = absl::Seconds(60);
};

class LocalCluster {
 public:
  // Starts the workers, then the coordinator with --workers pointing at them, and waits until
  // every process reports SERVING over grpc.health.v1.
  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(const LocalClusterOptions& options);
  ~LocalCluster();

  const std::string& coordinator_address() const { return coordinator_address_; }
  // "host:port" of the coordinator's HTTP API; empty when it was not asked for.
  const std::string& http_address() const { return http_address_; }
  const std::vector<std::string>& worker_addresses() const { return worker_addresses_; }
  // "host:port" of each worker's /metrics, in worker order (with worker_metrics), else empty.
  const std::vector<std::string>& worker_metrics_addresses() const {
    return worker_metrics_addresses_;
  }
  // Where the processes' port files and logs are (coordinator.log, worker0.log, ...).
  const std::string& work_dir() const { return work_dir_; }
  // SIGTERM to every process (coordinator first), SIGKILL after `grace`. Returns OK when each
  // exited with code 0.
  absl::Status Stop(absl::Duration grace);

 private:
  LocalCluster() = default;

  std::vector<base::Subprocess> processes_;  // Workers first, coordinator last.
  std::string coordinator_address_;
  std::string http_address_;
  std::vector<std::string> worker_addresses_;
  std::vector<std::string> worker_metrics_addresses_;
  std::string work_dir_;
};

// Starts `argv` with `--listen LISTEN --port_file F` appended (LISTEN is "host:port"; port 0
// picks a free one) and waits for it to serve. Returns the process and writes its address.
absl::StatusOr<base::Subprocess> StartServer(std::vector<std::string> argv,
                                             const std::string& listen,
                                             const std::string& port_file,
                                             const std::string& log_file, absl::Duration timeout,
                                             std::string* address);

// Directory of the running executable (to find sibling binaries).
std::string SelfDir();

}  // namespace arbor::tools

#endif  // ARBOR_TOOLS_LOCAL_CLUSTER_H_
