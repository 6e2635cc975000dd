#include "base/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"

namespace arbor::base {

absl::Status InitLogging(const std::string& name, const std::string& level) {
  const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log_level: '", level, "' is not one of trace, debug, info, warn, error, off"));
  }
  auto logger = spdlog::stderr_color_mt(name);
  logger->set_pattern("%^%L%$ %H:%M:%S.%e %n] %v");
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
  return absl::OkStatus();
}

}  // namespace arbor::base
