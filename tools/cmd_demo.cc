// `arbor demo`: the whole system on this machine, start to finish.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "rpc/health.h"
#include "tools/commands.h"
#include "tools/local_cluster.h"

namespace arbor::tools {

int RunDemo(const Args& args) {
  LocalClusterOptions options;
  options.bin_dir = SelfDir();
  options.work_dir = (std::filesystem::temp_directory_path() /
                      absl::StrCat("arbor-demo-", getpid()))
                         .string();
  printf("Starting a coordinator and %d worker(s) (logs in %s)...\n", options.num_workers,
         options.work_dir.c_str());
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::Start(options);
  if (!cluster.ok()) {
    fprintf(stderr, "demo: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  printf("coordinator %s: SERVING\n", (*cluster)->coordinator_address().c_str());
  for (const std::string& worker : (*cluster)->worker_addresses()) {
    printf("worker      %s: SERVING\n", worker.c_str());
  }
  if (absl::Status stopped = (*cluster)->Stop(absl::Seconds(10)); !stopped.ok()) {
    fprintf(stderr, "demo: unclean shutdown: %s\n", stopped.ToString().c_str());
    return 1;
  }
  printf("Stopped cleanly.\n");
  std::filesystem::remove_all(options.work_dir);
  return 0;
}

}  // namespace arbor::tools
