// Process-wide logging set-up for the binaries: spdlog to stderr with a level from a flag.
#ifndef ARBOR_BASE_LOGGING_H_
#define ARBOR_BASE_LOGGING_H_

#include <string>

#include "absl/status/status.h"

namespace arbor::base {

// `level` is one of trace, debug, info, warn, error, off. `name` prefixes every line so the
// interleaved output of `arbor up` says which process spoke.
absl::Status InitLogging(const std::string& name, const std::string& level);

}  // namespace arbor::base

#endif  // ARBOR_BASE_LOGGING_H_
