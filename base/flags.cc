#include "base/flags.h"

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "absl/flags/internal/parse.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace arbor::base {
namespace {

// Where a binary's main function and its own flags are: coordinator/coordinator_main.cc.
constexpr absl::string_view kMainFileSuffix = "_main.cc";

}  // namespace

std::vector<char*> ParseFlags(int argc, char** argv, absl::string_view usage) {
  absl::FlagsUsageConfig config;
  // Show flag files relative to the source tree: "worker/service/worker_main.cc".
  config.normalize_filename = [](absl::string_view file) -> std::string {
    constexpr absl::string_view kSelf = __FILE__;
    const absl::string_view root = kSelf.substr(0, kSelf.size() - sizeof("base/flags.cc") + 1);
    absl::ConsumePrefix(&file, root);
    return std::string(file);
  };
  // Arbor's flags live in its own folders; abseil's and gRPC's do not belong in --help. The
  // program's own (its *_main.cc) are listed first, apart, so they are not lost among the
  // shared ones.
  config.contains_help_flags = [](absl::string_view file) {
    return !absl::StrContains(file, "absl/") && !absl::StartsWith(file, "/usr/") &&
           !absl::EndsWith(file, kMainFileSuffix);
  };
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(usage);
  // absl::ParseCommandLine exits with 1 after --help; users and scripts expect 0 for help asked
  // for, so the usage flags are handled here.
  std::vector<char*> positional = absl::flags_internal::ParseCommandLineImpl(
      argc, argv, absl::flags_internal::ArgvListAction::kRemoveParsedArgs,
      absl::flags_internal::UsageFlagsAction::kIgnoreUsage,
      absl::flags_internal::OnUndefinedFlag::kAbortIfUndefined);
  std::string shared_usage(absl::ProgramUsageMessage());
  if (absl::flags_internal::GetFlagsHelpMode() == absl::flags_internal::HelpMode::kImportant) {
    std::ostringstream own;
    absl::flags_internal::FlagsHelp(own, kMainFileSuffix,
                                    absl::flags_internal::HelpFormat::kHumanReadable,
                                    absl::ProgramUsageMessage());
    // The hint on --helpfull belongs once, at the end, after the shared flags.
    const std::string text = own.str();
    std::cout << text.substr(0, text.find("Try --helpfull")) << "\n";
    shared_usage = "Shared flags:";
  }
  if (absl::flags_internal::HandleUsageFlags(std::cout, shared_usage) != -1) {
    std::cout.flush();
    std::exit(0);
  }
  return positional;
}

}  // namespace arbor::base
