#include "base/process_defaults.h"

#include "absl/synchronization/mutex.h"

namespace arbor::base {

void ApplyProcessDefaults() {
#ifdef NDEBUG
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
}

}  // namespace arbor::base
