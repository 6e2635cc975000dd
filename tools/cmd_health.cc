// `arbor health ADDRESS`: one grpc.health.v1 check, for scripts and humans.
#include <cstdio>

#include "absl/time/time.h"
#include "rpc/health.h"
#include "tools/commands.h"

namespace arbor::tools {

int RunHealth(const Args& args) {
  if (args.size() != 1) {
    fprintf(stderr, "usage: arbor health HOST:PORT\n");
    return 2;
  }
  absl::StatusOr<bool> serving = rpc::CheckServing(args[0], absl::Seconds(5));
  if (!serving.ok()) {
    fprintf(stderr, "%s: %s\n", args[0].c_str(), serving.status().ToString().c_str());
    return 1;
  }
  printf("%s: %s\n", args[0].c_str(), *serving ? "SERVING" : "NOT_SERVING");
  return *serving ? 0 : 1;
}

}  // namespace arbor::tools
