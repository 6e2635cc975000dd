// arbor: the command-line client and local launcher of Arbor.
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/flags.h"
#include "base/process_defaults.h"
#include "rpc/security.h"
#include "tools/commands.h"

namespace arbor::tools {

const std::vector<Command>& AllCommands() {
  static const std::vector<Command> kCommands = {
      {"demo", "",
       "Start Arbor here on SmolLM2, answer a question with the default policy and a chat "
       "question with entropix search, show their trees.",
       RunDemo},
      {"up", "", "Start a coordinator and workers here until Ctrl-C.", RunUp},
      {"health", "ADDRESS", "Ask a coordinator or worker whether it is serving.", RunHealth},
      {"make-model", "--preset P --out DIR", "Write a synthetic Llama checkpoint directory.",
       RunMakeModel},
      {"generate", "--prompt TEXT", "Generate and stream tokens coloured by strategy.",
       RunGenerate},
      {"submit", "--prompt TEXT", "Submit a detached job; prints its id.", RunSubmit},
      {"watch", "JOB", "Stream a job's events.", RunWatch},
      {"jobs", "", "List recent jobs.", RunJobs},
      {"job", "JOB", "Show one job.", RunJob},
      {"cancel", "JOB", "Cancel a job.", RunCancel},
      {"tree", "JOB",
       "Show a job's search tree (--format text|json|dot; text: --around NODE, --depth N).",
       RunTree},
      {"replay", "JOB",
       "Run a finished job's request again (same seed and policy, or --policy_mode/--policy_file "
       "changed) and compare the trees.",
       RunReplay},
      {"workers", "", "List the coordinator's workers.", RunWorkers},
      {"drain", "WORKER", "Stop routing to a worker and re-home its jobs.", RunDrain},
      {"undrain", "WORKER", "Route jobs to a drained worker again.", RunUndrain},
      {"eval", "", "Compare decoding strategies on task files (--tasks, --results).", RunEval},
      {"tasks", "", "Write generated task files (--family, --level, --count, --out).", RunTasks},
      {"calibrate", "",
       "Fit the policy's thresholds (and with --fit_temperature its sampling laws) to the "
       "model (--tasks or --text).",
       RunCalibrate},
  };
  return kCommands;
}

namespace {

std::string Usage() {
  std::string usage =
      "Arbor: tree-search generation with entropix sampling.\n\n"
      "Usage: arbor COMMAND [ARGS] [--flags]\n\nCommands:\n";
  for (const Command& command : AllCommands()) {
    absl::StrAppend(&usage, "  ", command.name, " ", command.usage,
                    std::string(std::max<int>(1, 22 - std::string(command.name).size() -
                                                     std::string(command.usage).size()),
                                ' '),
                    command.summary, "\n");
  }
  absl::StrAppend(&usage, "\nRun `arbor --helpfull` for every flag.");
  return usage;
}

}  // namespace
}  // namespace arbor::tools

int main(int argc, char** argv) {
  arbor::base::ApplyProcessDefaults();
  std::vector<char*> positional = arbor::base::ParseFlags(argc, argv, arbor::tools::Usage());
  if (positional.size() < 2) {
    fprintf(stderr, "%s\n", arbor::tools::Usage().c_str());
    return 2;
  }
  // The TLS identity and token every client command dials the coordinator with.
  if (absl::Status s = arbor::rpc::InitSecurity(); !s.ok()) {
    fprintf(stderr, "arbor: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  const std::string name = positional[1];
  for (const arbor::tools::Command& command : arbor::tools::AllCommands()) {
    if (name == command.name) {
      return command.run(arbor::tools::Args(positional.begin() + 2, positional.end()));
    }
  }
  fprintf(stderr, "arbor: unknown command '%s'\n\n%s\n", name.c_str(),
          arbor::tools::Usage().c_str());
  return 2;
}
