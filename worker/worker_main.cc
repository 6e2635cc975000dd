// arbor-worker: holds a model and its paged KV cache, and serves the internal Worker API.
#include <string>

#include "absl/flags/flag.h"
#include "arbor/v1/worker.grpc.pb.h"
#include "base/flags.h"
#include "base/logging.h"
#include "base/termination.h"
#include "rpc/serve.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50061",
          "Address to serve the Worker API on, host:port; port 0 picks a free port.");
ABSL_FLAG(std::string, model, "", "Model directory (Hugging Face layout: config.json, "
          "*.safetensors, tokenizer.json).");
ABSL_FLAG(std::string, device, "cpu", "Backend: cpu, or cuda:N for GPU N.");
ABSL_FLAG(std::string, coordinator, "",
          "Coordinator address; when set, register with it and send heartbeats.");
ABSL_FLAG(std::string, port_file, "", "Write the bound port here once serving (for scripts).");
ABSL_FLAG(int, drain_seconds, 10, "On SIGTERM, let in-flight runs finish for this long.");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error or off.");

int main(int argc, char** argv) {
  arbor::base::BlockTerminationSignals();
  arbor::base::ParseFlags(
      argc, argv,
      "Arbor worker: serves the internal Worker API (Info, Run, Release, Health) plus\n"
      "grpc.health.v1 and server reflection.\n\n"
      "NOTE: the model engine has not landed yet; the Worker methods answer UNIMPLEMENTED.\n\n"
      "Usage: arbor-worker --model DIR --listen HOST:PORT [--coordinator ADDR] [--device cpu]");
  if (absl::Status s = arbor::base::InitLogging("worker", absl::GetFlag(FLAGS_log_level));
      !s.ok()) {
    fprintf(stderr, "%s\n", s.ToString().c_str());
    return 2;
  }
  arbor::v1::Worker::Service worker_service;  // UNIMPLEMENTED for every method, for now.
  arbor::rpc::ServeOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.port_file = absl::GetFlag(FLAGS_port_file);
  options.drain_grace = absl::Seconds(absl::GetFlag(FLAGS_drain_seconds));
  return arbor::rpc::ServeUntilTerminated(options, {&worker_service});
}
