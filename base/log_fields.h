// Structured fields on log lines. A call site names its fields once and formats its message
// once; the process's formatter (base/log_format.h) renders the fields after the message as
// `key=value` in text, or as members of the line's object in JSON:
//
//   base::WithFields({{"job_id", id}, {"event", "started"}}).Info("job started");
//
// The fields reach the formatter through a thread-local set for the duration of the spdlog call:
// spdlog's log_msg carries only a message, and the loggers here are synchronous, so the sink
// formats the line on the thread that logged it. Process fields (the worker's id) go on every
// line of the process in JSON; in text the process name already prefixes the line.
#ifndef ARBOR_BASE_LOG_FIELDS_H_
#define ARBOR_BASE_LOG_FIELDS_H_

#include <spdlog/spdlog.h>

#include <concepts>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace arbor::base {

// One field. Keys are lower_snake_case and never ts, level, process or msg (the line's own
// members in JSON). Integers are written bare in JSON, everything else as a string.
struct LogField {
  LogField(std::string_view key, std::string_view value) : key(key), value(value) {}
  template <std::integral T>
  requires(!std::same_as<T, bool>) LogField(std::string_view key, T value)
      : key(key), value(std::to_string(value)), number(true) {}

  std::string key;
  std::string value;
  bool number = false;
};
using LogFields = std::vector<LogField>;

// Makes `fields` the current thread's line fields until destroyed (nesting restores the outer
// ones). WithFields uses it; a formatter test may too.
class ScopedLogFields {
 public:
  explicit ScopedLogFields(absl::Span<const LogField> fields);
  ~ScopedLogFields();
  ScopedLogFields(const ScopedLogFields&) = delete;
  ScopedLogFields& operator=(const ScopedLogFields&) = delete;

 private:
  absl::Span<const LogField> outer_;
};

// The fields of the line being logged on this thread; empty outside a ScopedLogFields.
absl::Span<const LogField> CurrentLogFields();

// Fields for every line this process logs from now on (replacing earlier ones), e.g. the worker's
// id once it is known. Thread-safe.
void SetProcessLogFields(LogFields fields);
std::shared_ptr<const LogFields> ProcessLogFields();

// Logs one line with fields through the default logger. See the example at the top; Log() takes
// the other levels.
class FieldLogger {
 public:
  explicit FieldLogger(LogFields fields) : fields_(std::move(fields)) {}

  template <typename... Args>
  void Log(spdlog::level::level_enum level, spdlog::format_string_t<Args...> format,
           Args&&... args) const {
    ScopedLogFields scope(fields_);
    spdlog::default_logger_raw()->log(level, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Info(spdlog::format_string_t<Args...> format, Args&&... args) const {
    Log(spdlog::level::info, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Warn(spdlog::format_string_t<Args...> format, Args&&... args) const {
    Log(spdlog::level::warn, format, std::forward<Args>(args)...);
  }

 private:
  const LogFields fields_;
};

inline FieldLogger WithFields(LogFields fields) { return FieldLogger(std::move(fields)); }

}  // namespace arbor::base

#endif  // ARBOR_BASE_LOG_FIELDS_H_
