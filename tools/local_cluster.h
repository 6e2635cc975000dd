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
  std::string bin_dir;        // Where arbor-coordinator and arbor-worker live.
  std::string work_dir;       // Port files and logs go here.
  std::string model_dir;      // Passed to the workers as --model.
  int num_workers = 1;
  std::string host = "127.0.0.1";
  std::string log_level = "warn";
  absl::Duration start_timeout = absl::Seconds(60);
};

class LocalCluster {
 public:
  // Starts the workers, then the coordinator with --workers pointing at them, and waits until
  // every process reports SERVING over grpc.health.v1.
  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(const LocalClusterOptions& options);
  ~LocalCluster();

  const std::string& coordinator_address() const { return coordinator_address_; }
  const std::vector<std::string>& worker_addresses() const { return worker_addresses_; }
  // SIGTERM to every process (coordinator first), SIGKILL after `grace`. Returns OK when each
  // exited with code 0.
  absl::Status Stop(absl::Duration grace);

 private:
  LocalCluster() = default;

  std::vector<base::Subprocess> processes_;  // Workers first, coordinator last.
  std::string coordinator_address_;
  std::vector<std::string> worker_addresses_;
};

// Starts `argv` with `--listen host:0 --port_file F` appended and waits for it to serve.
// Returns the process and writes its address.
absl::StatusOr<base::Subprocess> StartServer(std::vector<std::string> argv,
                                             const std::string& host, const std::string& port_file,
                                             const std::string& log_file, absl::Duration timeout,
                                             std::string* address);

// Directory of the running executable (to find sibling binaries).
std::string SelfDir();

}  // namespace arbor::tools

#endif  // ARBOR_TOOLS_LOCAL_CLUSTER_H_
