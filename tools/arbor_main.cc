// arbor: the command-line client and local launcher of Arbor.
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/flags.h"
#include "base/process_defaults.h"
#include "rpc/security.h"
#include "tools/commands.h"

namespace arbor::tools {

namespace {

using FlagList = std::vector<const char*>;

FlagList Concat(std::initializer_list<FlagList> lists) {
  FlagList all;
  for (const FlagList& list : lists) all.insert(all.end(), list.begin(), list.end());
  return all;
}

}  // namespace

const std::vector<Command>& AllCommands() {
  // Flags every client command reads (tools/client.cc).
  const FlagList client = {"coordinator", "json", "timeout_s"};
  // Flags of the local cluster `up` and `demo` start.
  const FlagList cluster = {"model", "num_workers", "worker_args", "log_level", "log_format"};
  // The prompt and policy of a new job (tools/cmd_generate.cc).
  const FlagList request = {"prompt",      "chat",        "tokens",      "max_tokens",
                            "policy_mode", "policy_file", "json_schema", "json_object"};
  static const std::vector<Command> kCommands = {
      {"help", "[COMMAND]", "Show a command's usage and flags (no COMMAND: this list).", RunHelp,
       {}},
      {"demo", "",
       "Start Arbor here on SmolLM2, answer a question with the default policy and a chat "
       "question with entropix search, show their trees.",
       RunDemo, cluster},
      {"up", "", "Start a coordinator and workers here until Ctrl-C.", RunUp,
       Concat({cluster, {"port", "http_port", "worker_metrics_port", "served_model_name",
        "kv_tokens", "kv_memory", "policy", "policy_file", "chat_template"}})},
      {"health", "ADDRESS", "Ask a coordinator or worker whether it is serving.", RunHealth, {}},
      {"make-model", "--preset P --out DIR", "Write a synthetic Llama checkpoint directory.",
       RunMakeModel, {"preset", "out", "seed", "gain", "dtype"}},
      {"generate", "--prompt TEXT", "Generate and stream tokens coloured by strategy.",
       RunGenerate, Concat({request, {"show_metrics"}, client})},
      {"submit", "--prompt TEXT", "Submit a detached job; prints its id.", RunSubmit,
       Concat({request, client})},
      {"watch", "JOB", "Stream a job's events.", RunWatch, Concat({{"show_metrics"}, client})},
      {"jobs", "", "List recent jobs, newest first (filtered by --state, --tag, --owner, --since).",
       RunJobs, Concat({{"limit", "state", "tag", "owner", "since"}, client})},
      {"job", "JOB", "Show one job.", RunJob, client},
      {"cancel", "JOB", "Cancel a job.", RunCancel, client},
      {"tree", "JOB",
       "Show a job's search tree (--format text|json|dot; text: --around NODE, --depth N).",
       RunTree, Concat({{"format", "around", "depth", "show_metrics"}, client})},
      {"replay", "JOB",
       "Run a finished job's request again (same seed and policy, or --policy_mode/--policy_file "
       "changed) and compare the trees.",
       RunReplay, Concat({{"policy_mode", "policy_file"}, client})},
      {"workers", "", "List the coordinator's workers.", RunWorkers, client},
      {"drain", "WORKER", "Stop routing to a worker and re-home its jobs.", RunDrain,
       client},
      {"undrain", "WORKER", "Route jobs to a drained worker again.", RunUndrain,
       client},
      {"eval", "", "Compare decoding strategies on task files (--tasks, --results).", RunEval,
       {"tasks", "strategies", "seeds", "seed", "max_tokens", "results", "report", "plot",
        "concurrency", "calibrate_difficulty", "families", "count", "coordinator"}},
      {"tasks", "", "Write generated task files (--family, --level, --count, --out).", RunTasks,
       {"family", "level", "count", "out", "seed"}},
      {"calibrate", "",
       "Fit the policy's thresholds (and with --fit_temperature its sampling laws) to the "
       "model (--tasks or --text).",
       RunCalibrate,
       {"tasks", "text", "quantiles", "policy_out", "fit_temperature", "fit_mode", "seed",
        "max_tokens", "concurrency", "coordinator"}},
  };
  return kCommands;
}

// Takes --help out of argv, so that `arbor COMMAND --help` shows that command's help rather
// than abseil's list of every flag; returns whether it was there.
bool TakeHelpFlag(int& argc, char** argv) {
  bool help = false;
  int kept = 0;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i > 0 && (arg == "--help" || arg == "-help" || arg == "-h")) {
      help = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return help;
}

}  // namespace arbor::tools

int main(int argc, char** argv) {
  arbor::base::ApplyProcessDefaults();
  const bool help = arbor::tools::TakeHelpFlag(argc, argv);
  std::vector<char*> positional =
      arbor::base::ParseFlags(argc, argv, arbor::tools::OverviewHelp());
  if (help) {
    return arbor::tools::RunHelp(positional.size() < 2 ? arbor::tools::Args()
                                                       : arbor::tools::Args{positional[1]});
  }
  if (positional.size() < 2) {
    fprintf(stderr, "%s\n", arbor::tools::OverviewHelp().c_str());
    return 2;
  }
  // The TLS identity and token every client command dials the coordinator with.
  if (absl::Status s = arbor::rpc::InitSecurity(); !s.ok()) {
    fprintf(stderr, "arbor: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  const std::string name = positional[1];
  if (const arbor::tools::Command* command = arbor::tools::FindCommand(name)) {
    return command->run(arbor::tools::Args(positional.begin() + 2, positional.end()));
  }
  fprintf(stderr, "arbor: unknown command '%s'\n\n%s\n", name.c_str(),
          arbor::tools::OverviewHelp().c_str());
  return 2;
}
