#include "tools/local_cluster.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "arbor/v1/cluster.grpc.pb.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "rpc/health.h"
#include "rpc/security.h"
#include "rpc/server.h"

namespace arbor::tools {
namespace {

// The last `n` non-empty lines of a server's log (its own account of why it stopped), each cut to
// 300 bytes, or "" when the log cannot be read.
std::string LastLines(const std::string& log_file, int n) {
  const absl::StatusOr<std::string> text = base::ReadFile(log_file);
  if (!text.ok()) return "";
  std::vector<std::string> lines;
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipWhitespace())) {
    lines.emplace_back(line.substr(0, 300));
  }
  const size_t first = lines.size() > static_cast<size_t>(n) ? lines.size() - n : 0;
  return absl::StrJoin(lines.begin() + first, lines.end(), "\n  ");
}

// Waits for a server to write its port file; fails early if the process exits, with the end of
// its log in the message (a busy port or a bad model says so there).
absl::StatusOr<int> AwaitPort(base::Subprocess& process, const std::string& port_file,
                              const std::string& log_file, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    absl::StatusOr<std::string> text = base::ReadFile(port_file);
    int port = 0;
    if (text.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &port) && port > 0) {
      return port;
    }
    if (std::optional<int> code = process.Wait(absl::Milliseconds(20))) {
      return absl::UnavailableError(absl::StrCat("server exited with code ", *code,
                                                 " before serving:\n  ", LastLines(log_file, 3),
                                                 "\n(whole log: ", log_file, ")"));
    }
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "server did not start within ", absl::FormatDuration(timeout), "; see ", log_file));
}

// Waits until the coordinator has dialled its static workers and lists `expected` as READY, so
// the first job does not race the coordinator's first health round.
absl::Status AwaitReadyWorkers(const std::string& coordinator, int expected,
                               absl::Duration timeout) {
  auto stub = v1::Cluster::NewStub(rpc::ProcessSecurity().Dial(coordinator));
  const absl::Time deadline = absl::Now() + timeout;
  int ready = 0;
  while (absl::Now() < deadline) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    v1::ListWorkersResponse response;
    if (stub->ListWorkers(&context, v1::ListWorkersRequest(), &response).ok()) {
      ready = 0;
      for (const v1::WorkerStatus& worker : response.workers()) {
        ready += worker.state() == v1::WORKER_STATE_READY;
      }
      if (ready >= expected) return absl::OkStatus();
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat("the coordinator lists ", ready, " of ", expected,
                                                  " workers as ready after ",
                                                  absl::FormatDuration(timeout)));
}

}  // namespace

std::string SelfDir() {
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? "." : self.parent_path().string();
}

absl::StatusOr<base::Subprocess> StartServer(std::vector<std::string> argv,
                                             const std::string& listen,
                                             const std::string& port_file,
                                             const std::string& log_file, absl::Duration timeout,
                                             std::string* address) {
  std::filesystem::remove(port_file);
  argv.push_back("--listen=" + listen);
  argv.push_back(absl::StrCat("--port_file=", port_file));
  ASSIGN_OR_RETURN(base::Subprocess process, base::Subprocess::Start(argv, log_file));
  ASSIGN_OR_RETURN(int port, AwaitPort(process, port_file, log_file, timeout));
  *address = rpc::WithPort(listen, port);
  RETURN_IF_ERROR(rpc::WaitForServing(*address, timeout));
  return process;
}

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(
    const LocalClusterOptions& options) {
  std::filesystem::create_directories(options.work_dir);
  auto cluster = std::unique_ptr<LocalCluster>(new LocalCluster());
  cluster->work_dir_ = options.work_dir;
  for (int i = 0; i < options.num_workers; ++i) {
    const std::string prefix = absl::StrCat(options.work_dir, "/worker", i);
    std::string address;
    std::vector<std::string> argv = {options.bin_dir + "/arbor-worker", "--model=" + options.model,
                                     "--log_level=" + options.log_level,
                                     "--log_format=" + options.log_format};
    argv.insert(argv.end(), options.worker_flags.begin(), options.worker_flags.end());
    const std::string metrics_port_file = prefix + ".metrics_port";
    if (options.worker_metrics) {
      std::filesystem::remove(metrics_port_file);
      argv.push_back(absl::StrCat("--metrics_listen=", options.host, ":",
                                  options.worker_metrics_port == 0
                                      ? 0
                                      : options.worker_metrics_port + i));
      argv.push_back("--metrics_port_file=" + metrics_port_file);
    }
    ASSIGN_OR_RETURN(base::Subprocess worker,
                     StartServer(std::move(argv), options.host + ":0", prefix + ".port",
                                 prefix + ".log", options.start_timeout, &address));
    cluster->processes_.push_back(std::move(worker));
    cluster->worker_addresses_.push_back(address);
    if (options.worker_metrics) {  // Bound before the model loads: there by now.
      ASSIGN_OR_RETURN(std::string port, base::ReadFile(metrics_port_file));
      cluster->worker_metrics_addresses_.push_back(
          absl::StrCat(options.host, ":", absl::StripAsciiWhitespace(port)));
    }
  }
  const std::string prefix = options.work_dir + "/coordinator";
  std::vector<std::string> argv = {
      options.bin_dir + "/arbor-coordinator", "--model=" + options.model,
      "--workers=" + absl::StrJoin(cluster->worker_addresses_, ","),
      "--log_level=" + options.log_level, "--log_format=" + options.log_format};
  argv.insert(argv.end(), options.coordinator_flags.begin(), options.coordinator_flags.end());
  const std::string http_port_file = prefix + ".http_port";
  if (options.http_port >= 0) {
    std::filesystem::remove(http_port_file);
    argv.push_back(absl::StrCat("--http_listen=", options.host, ":", options.http_port));
    argv.push_back("--http_port_file=" + http_port_file);
  }
  ASSIGN_OR_RETURN(
      base::Subprocess coordinator,
      StartServer(std::move(argv), absl::StrCat(options.host, ":", options.coordinator_port),
                  prefix + ".port", prefix + ".log", options.start_timeout,
                  &cluster->coordinator_address_));
  cluster->processes_.push_back(std::move(coordinator));
  if (options.http_port >= 0) {  // Written at bind, before the gRPC port: there by now.
    ASSIGN_OR_RETURN(std::string port, base::ReadFile(http_port_file));
    cluster->http_address_ = absl::StrCat(options.host, ":", absl::StripAsciiWhitespace(port));
  }
  RETURN_IF_ERROR(
      AwaitReadyWorkers(cluster->coordinator_address_, options.num_workers, options.start_timeout));
  return cluster;
}

LocalCluster::~LocalCluster() { Stop(absl::Seconds(5)).IgnoreError(); }

absl::Status LocalCluster::Stop(absl::Duration grace) {
  absl::Status result;
  // Coordinator first, so it stops sending work before the workers go.
  for (auto it = processes_.rbegin(); it != processes_.rend(); ++it) {
    const int code = it->Stop(grace);
    if (code != 0 && result.ok()) {
      result = absl::InternalError(absl::StrCat("process ", it->pid(), " exited with ", code));
    }
  }
  processes_.clear();
  return result;
}

}  // namespace arbor::tools
