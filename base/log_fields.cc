#include "base/log_fields.h"

#include "absl/synchronization/mutex.h"

namespace arbor::base {
namespace {

thread_local absl::Span<const LogField> current_fields;

struct ProcessFields {
  absl::Mutex mu;
  std::shared_ptr<const LogFields> fields ABSL_GUARDED_BY(mu) = std::make_shared<LogFields>();
};

ProcessFields& Process() {
  static ProcessFields* process = new ProcessFields();  // Never destroyed: logged at exit too.
  return *process;
}

}  // namespace

ScopedLogFields::ScopedLogFields(absl::Span<const LogField> fields) : outer_(current_fields) {
  current_fields = fields;
}

ScopedLogFields::~ScopedLogFields() { current_fields = outer_; }

absl::Span<const LogField> CurrentLogFields() { return current_fields; }

void SetProcessLogFields(LogFields fields) {
  auto shared = std::make_shared<const LogFields>(std::move(fields));
  ProcessFields& process = Process();
  absl::MutexLock lock(&process.mu);
  process.fields = std::move(shared);
}

std::shared_ptr<const LogFields> ProcessLogFields() {
  ProcessFields& process = Process();
  absl::MutexLock lock(&process.mu);
  return process.fields;
}

}  // namespace arbor::base
