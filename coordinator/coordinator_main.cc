// arbor-coordinator: owns jobs and their search trees, routes work to workers, serves the public
// Generation API and the Cluster API.
#include <string>

#include "absl/flags/flag.h"
#include "arbor/v1/cluster.grpc.pb.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/termination.h"
#include "rpc/serve.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "Address to serve the Generation and Cluster APIs on, host:port; port 0 picks one.");
ABSL_FLAG(std::string, workers, "", "Static worker addresses, comma-separated (host:port,...).");
ABSL_FLAG(std::string, port_file, "", "Write the bound port here once serving (for scripts).");
ABSL_FLAG(int, drain_seconds, 10, "On SIGTERM, let in-flight calls finish for this long.");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error or off.");

int main(int argc, char** argv) {
  arbor::base::BlockTerminationSignals();
  arbor::base::ParseFlags(
      argc, argv,
      "Arbor coordinator: serves the public Generation API and the Cluster API plus\n"
      "grpc.health.v1 and server reflection.\n\n"
      "NOTE: jobs and trees have not landed yet; Generation and Cluster methods answer\n"
      "UNIMPLEMENTED.\n\n"
      "Usage: arbor-coordinator --listen HOST:PORT [--workers A,B,...]");
  if (absl::Status s = arbor::base::InitLogging("coordinator", absl::GetFlag(FLAGS_log_level));
      !s.ok()) {
    fprintf(stderr, "%s\n", s.ToString().c_str());
    return 2;
  }
  arbor::v1::Generation::Service generation_service;  // UNIMPLEMENTED, for now.
  arbor::v1::Cluster::Service cluster_service;        // UNIMPLEMENTED, for now.
  arbor::rpc::ServeOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.port_file = absl::GetFlag(FLAGS_port_file);
  options.drain_grace = absl::Seconds(absl::GetFlag(FLAGS_drain_seconds));
  return arbor::rpc::ServeUntilTerminated(options, {&generation_service, &cluster_service});
}
