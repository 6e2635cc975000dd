#include "base/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "base/log_format.h"
#include "base/status_macros.h"

ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn, error or off.");
ABSL_FLAG(std::string, log_format, "text",
          "text, or json: one JSON object per line with ts (RFC 3339, UTC), level, process, msg "
          "and the line's fields (job_id, worker, event, ...).");

namespace arbor::base {

absl::Status InitLogging(const std::string& name) {
  const std::string level = absl::GetFlag(FLAGS_log_level);
  const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log_level: '", level, "' is not one of trace, debug, info, warn, error, off"));
  }
  ASSIGN_OR_RETURN(const LogFormat format, ParseLogFormat(absl::GetFlag(FLAGS_log_format)));
  auto logger = spdlog::stderr_color_mt(name);
  logger->set_formatter(MakeLogFormatter(format));
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
  return absl::OkStatus();
}

}  // namespace arbor::base
