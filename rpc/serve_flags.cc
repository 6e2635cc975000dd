#include "rpc/serve_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/time/time.h"

ABSL_FLAG(std::string, listen, "",
          "Address to serve on, host:port; port 0 picks a free one. Empty: loopback on the "
          "binary's own port, 127.0.0.1:50051 for arbor-coordinator (the Generation and Cluster "
          "APIs), 127.0.0.1:50061 for arbor-worker (the Worker API).");
ABSL_FLAG(std::string, port_file, "", "Write the bound port here once serving (for scripts).");
ABSL_FLAG(int, drain_seconds, 10,
          "On SIGTERM: stop taking new work (a worker first deregisters from its --coordinator, "
          "whose jobs then move to other workers), let in-flight calls finish for up to this "
          "long, then exit.");

namespace arbor::rpc {

ServeOptions ServeOptionsFromFlags(absl::string_view default_listen) {
  ServeOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  if (options.listen.empty()) options.listen = std::string(default_listen);
  options.port_file = absl::GetFlag(FLAGS_port_file);
  options.drain_grace = absl::Seconds(absl::GetFlag(FLAGS_drain_seconds));
  return options;
}

}  // namespace arbor::rpc
