// Process-wide logging set-up for the servers: spdlog to stderr, its level and line format from
// --log_level and --log_format (defined here, once for both servers), lines prefixed or tagged
// with the process name so the interleaved output of `arbor up` says which process spoke.
#ifndef ARBOR_BASE_LOGGING_H_
#define ARBOR_BASE_LOGGING_H_

#include <string>

#include "absl/status/status.h"

namespace arbor::base {

// Call after the flags are parsed. --log_level is one of trace, debug, info, warn, error, off;
// --log_format text or json (base/log_format.h). INVALID_ARGUMENT naming the flag otherwise.
absl::Status InitLogging(const std::string& name);

}  // namespace arbor::base

#endif  // ARBOR_BASE_LOGGING_H_
