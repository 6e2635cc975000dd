// The help texts of the `arbor` CLI: the overview of every command, and one command's usage with
// only the flags it reads. Flag descriptions come from absl's registry, so each is written once,
// beside its ABSL_FLAG.
#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "tools/commands.h"

namespace arbor::tools {
namespace {

constexpr char kEveryFlag[] =
    "Run `arbor --helpfull` for every flag, the TLS and logging ones included.";

// One flag's entry: "  --name (default: value)" and its description on the next line.
std::string FlagEntry(const char* name) {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  if (flag == nullptr) {
    // The command table names a flag no file defines: a bug in the table, shown rather than
    // hidden so the help test catches it.
    return absl::StrCat("  --", name, " (not a defined flag)\n");
  }
  const std::string value = flag->DefaultValue();
  return absl::StrCat("  --", name, " (default: ", value.empty() ? "\"\"" : value, ")\n      ",
                      flag->Help(), "\n");
}

}  // namespace

const Command* FindCommand(const std::string& name) {
  for (const Command& command : AllCommands()) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

std::string OverviewHelp() {
  std::string usage =
      "Arbor: tree-search generation with entropix sampling.\n\n"
      "Usage: arbor COMMAND [ARGS] [--flags]\n\nCommands:\n";
  for (const Command& command : AllCommands()) {
    const int width = std::string(command.name).size() + std::string(command.usage).size();
    absl::StrAppend(&usage, "  ", command.name, " ", command.usage,
                    std::string(std::max(1, 22 - width), ' '), command.summary, "\n");
  }
  absl::StrAppend(&usage,
                  "\nRun `arbor help COMMAND` (or `arbor COMMAND --help`) for a command's "
                  "flags.\n",
                  kEveryFlag);
  return usage;
}

std::string CommandHelp(const Command& command) {
  std::string help = absl::StrCat("Usage: arbor ", command.name);
  if (*command.usage != '\0') absl::StrAppend(&help, " ", command.usage);
  absl::StrAppend(&help, command.flags.empty() ? "" : " [--flags]", "\n\n", command.summary,
                  "\n");
  if (!command.flags.empty()) absl::StrAppend(&help, "\nFlags:\n");
  for (const char* name : command.flags) absl::StrAppend(&help, FlagEntry(name));
  absl::StrAppend(&help, "\n", kEveryFlag);
  return help;
}

int RunHelp(const Args& args) {
  if (args.empty()) {
    printf("%s\n", OverviewHelp().c_str());
    return 0;
  }
  const Command* command = args.size() == 1 ? FindCommand(args[0]) : nullptr;
  if (command == nullptr) {
    fprintf(stderr, "arbor help: no command '%s'; the commands are:\n\n%s\n",
            args[0].c_str(), OverviewHelp().c_str());
    return 2;
  }
  printf("%s\n", CommandHelp(*command).c_str());
  return 0;
}

}  // namespace arbor::tools
