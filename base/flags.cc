#include "base/flags.h"

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace arbor::base {

std::vector<char*> ParseFlags(int argc, char** argv, absl::string_view usage) {
  absl::FlagsUsageConfig config;
  // Show flag files relative to the source tree: "worker/worker_main.cc".
  config.normalize_filename = [](absl::string_view file) -> std::string {
    constexpr absl::string_view kSelf = __FILE__;
    const absl::string_view root = kSelf.substr(0, kSelf.size() - sizeof("base/flags.cc") + 1);
    absl::ConsumePrefix(&file, root);
    return std::string(file);
  };
  // Arbor's flags live in its own folders; abseil's and gRPC's do not belong in --help.
  config.contains_help_flags = [](absl::string_view file) {
    return !absl::StrContains(file, "absl/") && !absl::StartsWith(file, "/usr/");
  };
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(usage);
  return absl::ParseCommandLine(argc, argv);
}

}  // namespace arbor::base
