// arbor-coordinator: owns jobs and their search trees, routes work to workers, serves the public
// Generation API and the Cluster API.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "base/files.h"
#include "base/flags.h"
#include "base/log_fields.h"
#include "base/logging.h"
#include "base/process_defaults.h"
#include "base/reload_signal.h"
#include "base/status_macros.h"
#include "base/termination.h"
#include "coordinator/cluster/cluster_service.h"
#include "coordinator/cluster/readiness.h"
#include "coordinator/cluster/worker_pool.h"
#include "coordinator/flags/served_model_flags.h"
#include "coordinator/http/http_gateway.h"
#include "coordinator/job/timer.h"
#include "coordinator/served_model.h"
#include "coordinator/service/generation_service.h"
#include "coordinator/service/job_launcher.h"
#include "coordinator/service/job_registry.h"
#include "coordinator/service/prompt.h"
#include "coordinator/service/store_upkeep.h"
#include "coordinator/store/open_job_store.h"
#include "metrics/http_exporter.h"
#include "metrics/registry.h"
#include "model/model_store.h"
#include "policy/policy_convert.h"
#include "policy/policy_file_flag.h"
#include "rpc/internal_key.h"
#include "rpc/security.h"
#include "rpc/serve.h"
#include "rpc/serve_flags.h"
#include "rpc/tokens.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, workers, "",
          "Static worker addresses, comma-separated (host:port,...). Workers started with "
          "--coordinator register themselves instead; both may be used together.");
ABSL_FLAG(std::string, model, "",
          "The model whose tokenizer and chat template (a directory's tokenizer.json and "
          "tokenizer_config.json, or a GGUF file's metadata, or a known name such as "
          "smollm2-135m-instruct, or tiny: the random-weight preset) the coordinator uses to "
          "tokenize text and chat prompts and to decode generated text; the "
          "workers hold the weights. Without it only token-id prompts are accepted and events "
          "carry no text.");
ABSL_FLAG(int, max_active_jobs, 64, "Jobs running at once, >= 1.");
ABSL_FLAG(int, max_queued_jobs, 256,
          "Jobs waiting for a running slot, >= 0; beyond that Generate and Submit answer "
          "RESOURCE_EXHAUSTED.");
ABSL_FLAG(int, finished_jobs, 1000,
          "Finished jobs kept queryable (GetJob, Watch, GetTree), least recently used evicted.");
ABSL_FLAG(int64_t, finished_job_bytes, int64_t{512} << 20,
          "Bytes the finished jobs kept queryable may retain (their requests, schemas, trees "
          "and events, estimated), >= 0; beyond it, or beyond --finished_jobs, the least "
          "recently used are evicted.");
ABSL_FLAG(std::string, job_store, "none",
          "Where jobs outlive this process (docs/RELIABILITY.md): sqlite:PATH (one file, created "
          "if missing), postgres:CONNINFO (a libpq connection string or URI), or none (jobs live "
          "in memory only). With a store, an accepted job is recorded before the client hears of "
          "it, finished jobs stay queryable after a restart, and a restarted coordinator runs the "
          "jobs it left unfinished again. Several coordinators may share one store (PostgreSQL, "
          "or an SQLite file on one host), each with its own --coordinator_id: each job is held "
          "by one under a lease (--job_lease), every coordinator answers for every job, and the "
          "jobs of one that dies are taken over by another once its lease lapses.");
ABSL_FLAG(std::string, coordinator_id, "",
          "This coordinator's name in the job store: the jobs it accepts (or takes over) are held "
          "under it. Unique among the coordinators sharing a store; stable across restarts, so "
          "that a restarted coordinator runs its own unfinished jobs again at once instead of "
          "after their lease lapses. Default: the host name.");
ABSL_FLAG(std::string, advertise, "",
          "With a --job_store several coordinators share: host:port at which the others reach "
          "this coordinator's --listen. It is recorded with the leases of the jobs this one "
          "runs, so that a Watch (or GET /v1/jobs/ID/events) of such a job sent to another "
          "coordinator is relayed from here (docs/RELIABILITY.md). Default: --listen with the "
          "port it bound, unless its host is a wildcard (0.0.0.0, ::), where it must be set; "
          "behind NAT, or in Kubernetes, set it to the address the others reach (the pod IP).");
ABSL_FLAG(std::string, peer_tls_name, "",
          "With TLS: the name checked in another coordinator's certificate when this one relays "
          "a Watch from it (at its --advertise address, often a pod IP no certificate holds), "
          "e.g. arbor-coordinator; default: --tls_server_name, else the dialled host.");
ABSL_FLAG(absl::Duration, job_lease, absl::Seconds(10),
          "How long a coordinator holds a job in the job store without renewing: past it, "
          "another coordinator on the store takes the job over (and the first, should it come "
          "back, can no longer record it). Longer rides out longer store outages and pauses; "
          "shorter takes a dead coordinator's jobs over sooner. Must exceed the clock skew "
          "between the coordinators.");
ABSL_FLAG(absl::Duration, job_lease_renewal, absl::Seconds(3),
          "How often a coordinator renews its jobs' leases (one store statement for all of "
          "them), reads the Cancels other coordinators passed it, and looks for lapsed leases "
          "to take over; less than --job_lease, a third of it or less to survive a failed "
          "renewal.");
ABSL_FLAG(absl::Duration, job_store_max_age, absl::Hours(24 * 7),
          "Finished jobs older than this leave the job store; inf keeps them.");
ABSL_FLAG(int64_t, job_store_max_jobs, 100000,
          "Finished jobs the job store keeps, newest first; -1: no bound.");
ABSL_FLAG(int64_t, job_store_max_bytes, int64_t{4} << 30,
          "Bytes of finished jobs (requests, results, events, trees) the job store keeps, newest "
          "first; -1: no bound. Unfinished jobs are never deleted.");
ABSL_FLAG(int, steps_per_run, 64,
          "Decode steps per worker Run on a job's main path (fewer = more coordinator round "
          "trips, more = less responsive cancellation).");
ABSL_FLAG(bool, stream_runs, true,
          "Main-path Runs stream each decoded token from the worker (Worker.RunStream), so it "
          "reaches the client one forward step after it was decoded; false: tokens come when a "
          "Run ends, and --first_run_steps shortens the first Runs instead.");
ABSL_FLAG(int, first_run_steps, 4,
          "With --nostream_runs: decode steps of a job's first main-path Run, >= 1; each next Run "
          "decodes as many as the job has generated so far, up to --steps_per_run (fewer = "
          "earlier first tokens, more Runs per job).");
ABSL_FLAG(int, heartbeat_ms, 2000,
          "Heartbeat interval asked of registered workers and health-poll interval of static "
          "ones; a worker silent for 5 intervals is presumed dead and its jobs re-homed.");
ABSL_FLAG(std::string, http_listen, "",
          "Also serve HTTP here, host:port (port 0 picks one): the OpenAI-compatible API "
          "(/v1/completions, /v1/chat/completions, /v1/models), /health, /v1/jobs/ID and "
          "/v1/jobs/ID/tree (docs/HTTP.md), and Prometheus /metrics. Off when empty.");
ABSL_FLAG(std::string, http_port_file, "", "Write the bound HTTP port here once serving.");
ABSL_FLAG(int, http_threads, 64,
          "HTTP connection threads kept ready, >= 1; a streaming completion holds one for its "
          "whole length.");
ABSL_FLAG(int, http_max_threads, 1024,
          "HTTP connections served at once, >= --http_threads: when every thread is busy a new "
          "connection gets a thread of its own up to this many (clients that send their headers "
          "slowly cannot starve the others), ended after 10 s idle.");
ABSL_FLAG(int64_t, http_max_body_bytes, 8 << 20, "Largest HTTP request body; larger get 413.");
ABSL_FLAG(int64_t, max_prompt_bytes, 1 << 20,
          "Largest prompt text in bytes (text, or all chat message contents together), checked "
          "before tokenizing; larger requests get INVALID_ARGUMENT. >= 1.");
ABSL_FLAG(int, max_wait_seconds, 300,
          "How long a running job may wait in a row for KV space on its worker or for a worker "
          "to take it (its worker died or drained and none other is ready) before it fails; its "
          "deadline bounds the wait too. >= 0.");
ABSL_FLAG(std::string, cluster_listen, "",
          "Serve the Cluster API (worker registration, heartbeats, drain) on this host:port "
          "instead of --listen; with TLS only holders of a cluster certificate (signed by "
          "--tls_ca) can connect to it. Empty: the Cluster API shares --listen.");
ABSL_FLAG(std::string, cluster_port_file, "",
          "Write the bound --cluster_listen port here once serving.");
ABSL_FLAG(std::string, auth_tokens_file, "",
          "Bearer tokens of the public API, one `TOKEN NAME ROLE` per line (role user, admin or "
          "worker; docs/SECURITY.md); re-read on SIGHUP. With it every call needs a token, "
          "users see only their own jobs, and only admins, workers and cluster certificates "
          "reach the Cluster API. Empty: no authentication (loopback only, unless --insecure).");

namespace arbor::coordinator {
namespace {

// Where the Generation and Cluster APIs serve without --listen.
constexpr char kDefaultListen[] = "127.0.0.1:50051";

// The last component of --model (a directory's name without its trailing slashes).
std::string ModelFileName() {
  std::string model = absl::GetFlag(FLAGS_model);
  while (model.size() > 1 && model.back() == '/') model.pop_back();
  return std::filesystem::path(model).filename().string();
}

// The model id HTTP clients see: the flag, else the known model's name when --model is one (by
// name, file or identity: what `arbor up` serves it as), else the last path component of
// --model. A gateway in front of several coordinators (smg) routes by this id alone, not by the
// aliases, so the coordinators of one model must report the name users know it by.
std::string ServedModelName(const ServedModel& served) {
  if (std::string name = ServedModelFlagsFromFlags().served_model_name; !name.empty()) return name;
  if (served.known.known != nullptr) return served.known.known->name;
  return ModelFileName();
}

// Other names HTTP requests may give the model: the --model file or directory name, with and
// without its extension, and the name Arbor fetches it by when it is a known model's file.
std::vector<std::string> ModelAliases() {
  const std::string file = ModelFileName();
  if (file.empty()) return {};
  std::vector<std::string> aliases = {file, std::filesystem::path(file).stem().string()};
  for (const model::KnownModel& known : model::KnownModels()) {
    if (known.file_name == file) aliases.push_back(known.name);
  }
  return aliases;
}

// Null when --http_listen is empty; bound (and the port file written) otherwise.
// `upkeep`: the job store's (null without one), whose health /health follows.
absl::StatusOr<std::unique_ptr<http::HttpGateway>> BindHttp(
    const std::string& internal_key, const rpc::Authenticator* auth, const ServedModel& served,
    const entropix::PolicyConfig& policy, const PromptCodec& prompts, JobLauncher* launcher,
    const StoreUpkeep* upkeep) {
  http::HttpGatewayOptions options;
  options.listen = absl::GetFlag(FLAGS_http_listen);
  if (options.listen.empty()) return nullptr;
  options.model_id = ServedModelName(served);
  if (upkeep != nullptr) options.store_health = [upkeep] { return upkeep->Health(); };
  options.model_aliases = ModelAliases();
  options.threads = absl::GetFlag(FLAGS_http_threads);
  options.max_threads = absl::GetFlag(FLAGS_http_max_threads);
  options.max_body_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_http_max_body_bytes));
  options.tls_cert_file = rpc::ProcessSecurity().cert_file();
  options.tls_key_file = rpc::ProcessSecurity().key_file();
  options.cluster_internal_key = internal_key;
  options.authenticator = auth;
  if (auth != nullptr) {
    options.tenant_room = [auth, launcher](absl::string_view authorization,
                                           absl::Span<const arbor::v1::GenerateRequest> choices) {
      const absl::StatusOr<rpc::Identity> caller = auth->Authenticate(authorization);
      return caller.ok() ? launcher->CheckTenantRoom(*caller, choices) : caller.status();
    };
  }
  options.default_policy = policy::PolicyToProto(policy);
  options.tool_format = prompts.tool_format();
  if (options.threads < 1 || absl::GetFlag(FLAGS_http_max_body_bytes) < 1) {
    return absl::InvalidArgumentError("--http_threads and --http_max_body_bytes must be >= 1");
  }
  if (options.max_threads < options.threads) {
    return absl::InvalidArgumentError(absl::StrCat("--http_max_threads: ", options.max_threads,
                                                   " is below --http_threads (", options.threads,
                                                   ")"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<http::HttpGateway> gateway, http::HttpGateway::Bind(options));
  metrics::AddMetricsRoute(gateway->server(), metrics::DefaultRegistry());
  if (const std::string file = absl::GetFlag(FLAGS_http_port_file); !file.empty()) {
    RETURN_IF_ERROR(base::WriteFileAtomically(file, absl::StrCat(gateway->port(), "\n")));
  }
  return gateway;
}

// The public port needs TLS and tokens beyond loopback; the cluster port TLS (its clients
// authenticate with certificates); HTTP like the public port.
absl::Status CheckListenAddresses(bool tokens) {
  const bool tls = rpc::ProcessSecurity().tls();
  RETURN_IF_ERROR(rpc::CheckExposure("listen", rpc::ServeOptionsFromFlags(kDefaultListen).listen,
                                     tls, /*needs_tokens=*/true, tokens));
  if (const std::string cluster = absl::GetFlag(FLAGS_cluster_listen); !cluster.empty()) {
    RETURN_IF_ERROR(
        rpc::CheckExposure("cluster_listen", cluster, tls, /*needs_tokens=*/false, tokens));
  }
  if (const std::string http = absl::GetFlag(FLAGS_http_listen); !http.empty()) {
    RETURN_IF_ERROR(rpc::CheckExposure("http_listen", http, tls, /*needs_tokens=*/true, tokens));
  }
  return absl::OkStatus();
}

// Null without --auth_tokens_file.
absl::StatusOr<std::unique_ptr<rpc::Authenticator>> LoadTokens() {
  const std::string file = absl::GetFlag(FLAGS_auth_tokens_file);
  if (file.empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<rpc::Authenticator>> auth = rpc::Authenticator::Load(file);
  if (!auth.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth_tokens_file: ", auth.status().message()));
  }
  return auth;
}

// The Cluster API on its own port (--cluster_listen), where only cluster members connect.
absl::StatusOr<std::unique_ptr<rpc::Server>> StartClusterServer(ClusterService& cluster) {
  const std::string listen = absl::GetFlag(FLAGS_cluster_listen);
  ASSIGN_OR_RETURN(
      std::unique_ptr<rpc::Server> server,
      rpc::Server::Start(listen, {&cluster},
                         rpc::ProcessSecurity().ServerCredentials(rpc::ClientCerts::kRequired)));
  if (const std::string file = absl::GetFlag(FLAGS_cluster_port_file); !file.empty()) {
    RETURN_IF_ERROR(base::WriteFileAtomically(file, absl::StrCat(server->port(), "\n")));
  }
  spdlog::info("Cluster API on {}", server->address());
  return server;
}

// The counts the flags give, each in range; the message names them all.
absl::Status CheckCountFlags() {
  if (absl::GetFlag(FLAGS_max_active_jobs) < 1 || absl::GetFlag(FLAGS_max_queued_jobs) < 0 ||
      absl::GetFlag(FLAGS_finished_jobs) < 0 || absl::GetFlag(FLAGS_finished_job_bytes) < 0 ||
      absl::GetFlag(FLAGS_steps_per_run) < 1 || absl::GetFlag(FLAGS_first_run_steps) < 1 ||
      absl::GetFlag(FLAGS_heartbeat_ms) < 1) {
    return absl::InvalidArgumentError(
        "--max_active_jobs, --steps_per_run, --first_run_steps and --heartbeat_ms must be >= 1; "
        "--max_queued_jobs, --finished_jobs and --finished_job_bytes >= 0");
  }
  return absl::OkStatus();
}

// SIGHUP reloads --auth_tokens_file; a bad file keeps the previous tokens.
std::unique_ptr<base::ReloadOnSignal> ReloadTokensOnSignal(rpc::Authenticator* auth) {
  if (auth == nullptr) return nullptr;
  return std::make_unique<base::ReloadOnSignal>([auth] {
    const absl::Status reloaded = auth->Reload();
    if (reloaded.ok()) {
      spdlog::info("--auth_tokens_file reloaded");
    } else {
      spdlog::error("--auth_tokens_file not reloaded, the previous tokens stay: {}",
                    reloaded.ToString());
    }
  });
}

// The tokenizer and chat template of --model; without one, token-id prompts only.
absl::StatusOr<std::unique_ptr<PromptCodec>> LoadPrompts(const ServedModel& served) {
  if (served.path.empty()) {
    spdlog::warn("no --model: only token-id prompts are accepted and events carry no text");
    return std::make_unique<PromptCodec>();
  }
  absl::StatusOr<std::unique_ptr<PromptCodec>> loaded =
      PromptCodec::Load(served.path, ServedModelFlagsFromFlags().chat_template);
  if (!loaded.ok())
    return absl::Status(loaded.status().code(),
                        absl::StrCat("--model: ", loaded.status().ToString()));
  if ((*loaded)->has_chat_template()) {
    spdlog::info("chat template: {}", (*loaded)->chat_template_description());
  } else {
    spdlog::warn("chat template: {}", (*loaded)->chat_template_description());
  }
  return loaded;
}

WorkerPoolOptions PoolOptions(absl::Duration heartbeat, const ServedModel& served) {
  WorkerPoolOptions options;
  options.model = {served.identity.name, served.identity.fingerprint};
  options.heartbeat_interval = heartbeat;
  options.heartbeat_timeout = 5 * heartbeat;
  options.poll_interval = heartbeat;
  // Owner of the sequences this process creates on workers: they drop them when it is gone.
  options.epoch = absl::Uniform<uint64_t>(absl::BitGen(), 1, UINT64_MAX);
  return options;
}

absl::Status AddStaticWorkers(WorkerPool& pool) {
  for (absl::string_view address :
       absl::StrSplit(absl::GetFlag(FLAGS_workers), ',', absl::SkipWhitespace())) {
    if (absl::Status added = pool.AddStatic(std::string(address)); !added.ok()) {
      return absl::Status(added.code(), absl::StrCat("--workers: ", added.ToString()));
    }
  }
  return absl::OkStatus();
}

// The store --job_store names (null for none) and the unfinished jobs this coordinator took
// over at start (its own, left by an earlier process under its id, and any whose lease lapsed):
// claimed before this process accepts a job.
struct OpenedStore {
  std::unique_ptr<JobStore> store;
  std::vector<StoredJob> claimed;
};

// --job_store's lease: --coordinator_id (default the host name) and --job_lease.
absl::StatusOr<LeaseOptions> LeaseOptionsFromFlags() {
  LeaseOptions lease;
  lease.coordinator = absl::GetFlag(FLAGS_coordinator_id);
  if (lease.coordinator.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
      return absl::InvalidArgumentError(
          "--coordinator_id: the host name is unknown; name this coordinator");
    }
    lease.coordinator = host;
  }
  lease.duration = absl::GetFlag(FLAGS_job_lease);
  const absl::Duration renewal = absl::GetFlag(FLAGS_job_lease_renewal);
  if (renewal <= absl::ZeroDuration() || renewal >= lease.duration) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--job_lease_renewal (", absl::FormatDuration(renewal),
        ") must be above 0 and below --job_lease (", absl::FormatDuration(lease.duration),
        "): a lease renewed later than it lapses lets another coordinator take the jobs"));
  }
  return lease;
}

absl::StatusOr<OpenedStore> OpenStoreFromFlags() {
  OpenedStore out;
  if (absl::GetFlag(FLAGS_job_store) == "none") return out;  // No store: no leases either.
  ASSIGN_OR_RETURN(LeaseOptions lease, LeaseOptionsFromFlags());
  RETURN_IF_ERROR(CheckAdvertise(absl::GetFlag(FLAGS_advertise)));
  const std::string coordinator = lease.coordinator;
  absl::StatusOr<std::unique_ptr<JobStore>> store =
      OpenJobStore(absl::GetFlag(FLAGS_job_store), std::move(lease));
  if (!store.ok()) {
    return absl::Status(store.status().code(),
                        absl::StrCat("--job_store: ", store.status().message()));
  }
  out.store = *std::move(store);
  ASSIGN_OR_RETURN(out.claimed, out.store->TakeOver(Claim::kLapsedAndOwn));
  spdlog::info("job store {}: coordinator {} took over {} unfinished jobs to resume",
               absl::GetFlag(FLAGS_job_store), coordinator, out.claimed.size());
  return out;
}

// Resumes `opened`'s claimed jobs, keeps the leases and applies the retention flags; null
// without a store.
std::unique_ptr<StoreUpkeep> StartStoreUpkeep(OpenedStore& opened, JobLauncher* launcher,
                                              JobRegistry* registry) {
  if (opened.store == nullptr) return nullptr;
  StoreUpkeepOptions options;
  options.retention.max_age = absl::GetFlag(FLAGS_job_store_max_age);
  options.retention.max_jobs = absl::GetFlag(FLAGS_job_store_max_jobs);
  options.retention.max_bytes = absl::GetFlag(FLAGS_job_store_max_bytes);
  options.renew_every = absl::GetFlag(FLAGS_job_lease_renewal);
  return std::make_unique<StoreUpkeep>(options, opened.store.get(), launcher, registry,
                                       base::RealClock::Get(), std::move(opened.claimed));
}

JobRegistryOptions RegistryOptions() {
  JobRegistryOptions options;
  options.admission.max_active = absl::GetFlag(FLAGS_max_active_jobs);
  options.admission.max_queued = absl::GetFlag(FLAGS_max_queued_jobs);
  options.finished_jobs = absl::GetFlag(FLAGS_finished_jobs);
  options.finished_job_bytes = absl::GetFlag(FLAGS_finished_job_bytes);
  options.job_store = absl::GetFlag(FLAGS_job_store) != "none";
  return options;
}

absl::StatusOr<LauncherOptions> LauncherOptionsFromFlags(const ServedModel& served) {
  LauncherOptions options;
  absl::StatusOr<DefaultPolicy> policy = ChooseDefaultPolicy(
      served, ServedModelFlagsFromFlags().policy, policy::DefaultPolicyFileFromFlags());
  if (!policy.ok()) return policy.status();
  options.policy = std::move(policy->policy);
  base::WithFields({{"event", "default_policy"}}).Info("default policy: {}", policy->description);
  options.job.steps_per_run = absl::GetFlag(FLAGS_steps_per_run);
  options.job.first_run_steps = absl::GetFlag(FLAGS_first_run_steps);
  options.job.stream_runs = absl::GetFlag(FLAGS_stream_runs);
  options.limits.max_prompt_bytes = std::max<int64_t>(1, absl::GetFlag(FLAGS_max_prompt_bytes));
  options.job.max_wait = absl::Seconds(std::max(0, absl::GetFlag(FLAGS_max_wait_seconds)));
  return options;
}

// The public server's options: the HTTP gateway follows it (started on the in-process channels,
// stopped when draining), and grpc.health.v1 "arbor.ready" follows the workers (readiness.h),
// stopping before the server goes away.
rpc::ServeOptions PublicServeOptions(http::HttpGateway* gateway, rpc::Server* cluster_server,
                                     WorkerPool& pool,
                                     std::unique_ptr<ReadinessReporter>& readiness) {
  rpc::ServeOptions options = rpc::ServeOptionsFromFlags(kDefaultListen);
  options.credentials = rpc::ProcessSecurity().ServerCredentials(rpc::ClientCerts::kOptional);
  options.on_serving = [gateway, cluster_server, &pool, &readiness](rpc::Server& server) {
    if (gateway != nullptr) {
      gateway->Start(server.InProcessChannel(), cluster_server != nullptr
                                                    ? cluster_server->InProcessChannel()
                                                    : server.InProcessChannel());
    }
    readiness = std::make_unique<ReadinessReporter>(
        &pool, [&server](bool ready) { server.SetServing(kReadyService, ready); },
        absl::Milliseconds(250));
  };
  options.on_draining = [gateway, &readiness] {
    readiness.reset();
    if (gateway != nullptr) gateway->Stop();
  };
  return options;
}

// Prints `status` (its message only) and gives the exit code of a bad start.
// How Watches of jobs another coordinator holds reach it: --job_lease bounds the wait for a
// survivor, --peer_tls_name names the other coordinators' certificates.
WatchRelayOptions RelayOptionsFromFlags() {
  WatchRelayOptions relay;
  relay.lease = absl::GetFlag(FLAGS_job_lease);
  if (const std::string name = absl::GetFlag(FLAGS_peer_tls_name); !name.empty()) {
    relay.dial = [name](const std::string& address) {
      return rpc::ProcessSecurity().DialNamed(address, name);
    };
  }
  return relay;
}

// Records this coordinator's address with its leases once the port is known, for the others
// to relay Watches from.
void AdvertiseOnceServing(JobStore& store, rpc::ServeOptions& options) {
  options.on_serving = [&store, serve = options.on_serving](rpc::Server& server) {
    const std::string address = AdvertisedAddress(absl::GetFlag(FLAGS_advertise), server.address());
    if (absl::Status advertised = store.Advertise(address); !advertised.ok()) {
      spdlog::warn("job store: address {} recorded at the next lease renewal: {}", address,
                   advertised.ToString());
    }
    serve(server);
  };
}

int StartFailed(const absl::Status& status) {
  fprintf(stderr, "%s\n", std::string(status.message()).c_str());
  return 2;
}

int Main() {
  absl::StatusOr<std::unique_ptr<rpc::Authenticator>> auth = LoadTokens();
  if (!auth.ok()) return StartFailed(auth.status());
  if (absl::Status s = CheckListenAddresses(*auth != nullptr); !s.ok()) return StartFailed(s);
  const std::unique_ptr<base::ReloadOnSignal> reload = ReloadTokensOnSignal(auth->get());
  if (absl::Status s = CheckCountFlags(); !s.ok()) return StartFailed(s);
  absl::StatusOr<ServedModel> served = ResolveServedModel(absl::GetFlag(FLAGS_model));
  if (!served.ok()) return StartFailed(served.status());
  absl::StatusOr<std::unique_ptr<PromptCodec>> prompts = LoadPrompts(*served);
  if (!prompts.ok()) return StartFailed(prompts.status());

  const absl::Duration heartbeat = absl::Milliseconds(absl::GetFlag(FLAGS_heartbeat_ms));
  const WorkerPool::StubFactory dial = [](const std::string& address) {
    return arbor::v1::Worker::NewStub(rpc::ProcessSecurity().Dial(address));
  };
  WorkerPool pool(PoolOptions(heartbeat, *served), base::RealClock::Get(), dial);
  if (absl::Status s = AddStaticWorkers(pool); !s.ok()) return StartFailed(s);
  absl::StatusOr<OpenedStore> store = OpenStoreFromFlags();
  if (!store.ok()) return StartFailed(store.status());
  pool.StartMonitor();
  JobRegistry registry(RegistryOptions());
  absl::StatusOr<LauncherOptions> launcher_options = LauncherOptionsFromFlags(*served);
  if (!launcher_options.ok()) return StartFailed(launcher_options.status());
  if (*auth != nullptr) launcher_options->tenants = (*auth)->Names();
  ThreadTimer timer;  // KV-exhausted backoffs; callbacks hold jobs weakly.
  JobLauncher launcher(*launcher_options, &pool, &registry, prompts->get(), base::RealClock::Get(),
                       &timer, GrpcWorkerClients(), store->store.get());
  std::unique_ptr<StoreUpkeep> upkeep = StartStoreUpkeep(*store, &launcher, &registry);

  // How the Cluster API knows this process's own HTTP gateway (ClusterAccess).
  const std::string internal_key = rpc::NewInternalKey();
  absl::StatusOr<std::unique_ptr<http::HttpGateway>> gateway =
      BindHttp(internal_key, auth->get(), *served, launcher_options->policy, **prompts,
               &launcher, upkeep.get());
  if (!gateway.ok()) return StartFailed(absl::InvalidArgumentError(gateway.status().ToString()));
  GenerationService generation(&launcher, &registry, prompts->get(), auth->get(),
                               store->store.get(), RelayOptionsFromFlags());
  ClusterService cluster(&pool, heartbeat,
                         ClusterAccess(auth->get(), rpc::ProcessSecurity().tls(), internal_key));
  std::unique_ptr<rpc::Server> cluster_server;
  if (!absl::GetFlag(FLAGS_cluster_listen).empty()) {
    absl::StatusOr<std::unique_ptr<rpc::Server>> started = StartClusterServer(cluster);
    if (!started.ok()) {
      return StartFailed(absl::InvalidArgumentError(
          absl::StrCat("--cluster_listen: ", started.status().ToString())));
    }
    cluster_server = *std::move(started);
  }
  std::unique_ptr<ReadinessReporter> readiness;
  rpc::ServeOptions options =
      PublicServeOptions(gateway->get(), cluster_server.get(), pool, readiness);
  // Jobs the shutdown cancels stay unfinished in the store: the next coordinator runs them.
  options.on_draining = [&launcher, drain = options.on_draining] {
    launcher.KeepCancelledUnfinished();
    drain();
  };
  if (store->store != nullptr) AdvertiseOnceServing(*store->store, options);
  std::vector<grpc::Service*> services = {&generation};
  if (cluster_server == nullptr) services.push_back(&cluster);
  const int code = rpc::ServeUntilTerminated(options, services);
  if (cluster_server != nullptr) {
    cluster_server->Shutdown(options.drain_grace);
    cluster_server->Wait();
  }
  // Detached jobs would hold KV on the workers after we are gone.
  registry.CancelAll();
  if (store->store != nullptr) {
    // The jobs left unfinished go to the other coordinators on the store now, not once their
    // leases lapse (or to this coordinator's next start, whichever comes first).
    upkeep.reset();
    if (absl::Status released = store->store->Release(); !released.ok()) {
      spdlog::warn("job store: leases not released (they lapse instead): {}", released.ToString());
    }
  }
  return code;
}

}  // namespace
}  // namespace arbor::coordinator

int main(int argc, char** argv) {
  arbor::base::ApplyProcessDefaults();
  arbor::base::BlockTerminationSignals();
  arbor::base::BlockReloadSignal();
  arbor::base::ParseFlags(
      argc, argv,
      "Arbor coordinator: serves the public Generation API (Generate, Submit, Watch, Cancel,\n"
      "GetJob, ListJobs, GetTree) and the Cluster API (RegisterWorker, Heartbeat, ListWorkers,\n"
      "DrainWorker), plus grpc.health.v1 and server reflection. Jobs run on workers given by\n"
      "--workers or registering themselves (arbor-worker --coordinator ADDR).\n\n"
      "With --http_listen it also serves an OpenAI-compatible HTTP API (docs/HTTP.md).\n"
      "Beyond loopback it needs TLS (--tls_cert, --tls_key, --tls_ca) and bearer tokens\n"
      "(--auth_tokens_file), or --insecure; see docs/SECURITY.md.\n\n"
      "Usage: arbor-coordinator --listen HOST:PORT --model NAME|FILE|DIR [--workers A,B,...]\n"
      "                         [--http_listen HOST:PORT] [--cluster_listen HOST:PORT]");
  if (absl::Status s = arbor::base::InitLogging("coordinator"); !s.ok()) {
    fprintf(stderr, "%s\n", s.ToString().c_str());
    return 2;
  }
  if (absl::Status s = arbor::rpc::InitSecurity(); !s.ok()) {
    fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 2;
  }
  return arbor::coordinator::Main();
}
