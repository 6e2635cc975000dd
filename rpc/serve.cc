#include "rpc/serve.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "base/termination.h"

namespace arbor::rpc {

int ServeUntilTerminated(const ServeOptions& options, const std::vector<grpc::Service*>& services) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(options.listen, services, options.credentials);
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  if (!options.port_file.empty()) {
    absl::Status written =
        base::WriteFileAtomically(options.port_file, absl::StrCat((*server)->port(), "\n"));
    if (!written.ok()) {
      spdlog::error("--port_file: {}", written.ToString());
      return 1;
    }
  }
  spdlog::info("serving on {}", (*server)->address());
  if (options.on_serving) options.on_serving(**server);

  const int signal = base::WaitForTerminationSignal();
  spdlog::info("signal {}: draining (up to {})", signal, absl::FormatDuration(options.drain_grace));
  if (options.on_draining) options.on_draining();
  (*server)->Shutdown(options.drain_grace);
  (*server)->Wait();
  spdlog::info("stopped");
  return 0;
}

}  // namespace arbor::rpc
