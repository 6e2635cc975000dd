// What a log line looks like. Text, for people: `I 12:34:56.789 coordinator] job started
// job_id=j1-0a1b2c3d event=started`, fields (base/log_fields.h) after the message as key=value,
// a value quoted as a JSON string when it is empty or holds spaces, quotes, `=`, control or
// non-ASCII bytes. JSON, for log collectors: one object per line,
//   {"ts":"2025-01-02T03:04:05.123456Z","level":"info","process":"coordinator","msg":"job started",
//    "job_id":"j1-0a1b2c3d","event":"started"}
// with ts in RFC 3339 UTC to the microsecond, the spdlog level name, the process name, the
// message, then the process's fields and the line's (a line field replaces a process field of
// the same key). Strings are escaped as JSON requires; invalid UTF-8 becomes U+FFFD, so every
// line parses whatever a message carries.
#ifndef ARBOR_BASE_LOG_FORMAT_H_
#define ARBOR_BASE_LOG_FORMAT_H_

#include <spdlog/formatter.h>

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace arbor::base {

enum class LogFormat { kText, kJson };

// "text" or "json"; INVALID_ARGUMENT naming --log_format otherwise.
absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name);

std::unique_ptr<spdlog::formatter> MakeLogFormatter(LogFormat format);

}  // namespace arbor::base

#endif  // ARBOR_BASE_LOG_FORMAT_H_
