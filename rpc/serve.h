// The life of a server binary after its flags are parsed: bind, announce the port, serve until
// SIGTERM/SIGINT, drain gracefully, exit.
#ifndef ARBOR_RPC_SERVE_H_
#define ARBOR_RPC_SERVE_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "rpc/server.h"

namespace arbor::rpc {

struct ServeOptions {
  std::string listen;     // "host:port"; port 0 picks a free port.
  std::string port_file;  // When set, the bound port is written here once serving.
  std::shared_ptr<grpc::ServerCredentials> credentials;  // Null: plaintext.
  absl::Duration drain_grace = absl::Seconds(10);  // In-flight calls get this long on SIGTERM.
  // Called once serving, with the running server (e.g. to start heartbeats).
  std::function<void(Server&)> on_serving;
  // Called when termination starts, before the server stops accepting calls.
  std::function<void()> on_draining;
};

// Requires base::BlockTerminationSignals() to have run before any thread started.
// Returns the process exit code: 0 after a clean drain, 1 when the server could not start.
int ServeUntilTerminated(const ServeOptions& options, const std::vector<grpc::Service*>& services);

}  // namespace arbor::rpc

#endif  // ARBOR_RPC_SERVE_H_
