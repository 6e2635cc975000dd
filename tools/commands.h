// The subcommands of the `arbor` CLI. Each takes the positional arguments after its name (flags
// are parsed globally by main) and returns the process exit code.
#ifndef ARBOR_TOOLS_COMMANDS_H_
#define ARBOR_TOOLS_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/local_cluster.h"

namespace arbor::tools {

using Args = std::vector<std::string>;

struct Command {
  const char* name;
  const char* usage;    // Arguments, e.g. "ADDRESS".
  const char* summary;  // One line for `arbor --help`.
  int (*run)(const Args& args);
  // The flags the command reads, in the order its help lists them; their descriptions come
  // from absl's flag registry.
  std::vector<const char*> flags;
};

// Every subcommand, in the order `arbor --help` lists them.
const std::vector<Command>& AllCommands();

// The overview `arbor --help` prints: every command with its summary.
std::string OverviewHelp();
// What `arbor help COMMAND` and `arbor COMMAND --help` print: usage, summary, and the
// command's own flags.
std::string CommandHelp(const Command& command);
// The command called `name`, or null.
const Command* FindCommand(const std::string& name);
// `arbor help [COMMAND]`.
int RunHelp(const Args& args);

int RunDemo(const Args& args);
int RunUp(const Args& args);
// The local cluster `up` and `demo` start, from --model, --num_workers, --log_level and
// --log_format; `name` labels its work directory.
absl::StatusOr<LocalClusterOptions> LocalClusterOptionsFromFlags(const std::string& name);
int RunHealth(const Args& args);
int RunMakeModel(const Args& args);
// Client commands (tools/client.h): talk to a coordinator given by --coordinator.
int RunGenerate(const Args& args);
int RunSubmit(const Args& args);
int RunWatch(const Args& args);
int RunJobs(const Args& args);
int RunJob(const Args& args);
int RunCancel(const Args& args);
int RunTree(const Args& args);
int RunReplay(const Args& args);
int RunWorkers(const Args& args);
int RunDrain(const Args& args);
int RunUndrain(const Args& args);
// Evaluation (tools/eval/).
int RunEval(const Args& args);
int RunTasks(const Args& args);
int RunCalibrate(const Args& args);

}  // namespace arbor::tools

#endif  // ARBOR_TOOLS_COMMANDS_H_
