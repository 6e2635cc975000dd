// RunCancellation: the stop runs outside the lock, once, after both the job's cancel and the
// client's OnCancel.
#include "coordinator/job/run_cancellation.h"

#include <utility>

namespace arbor::coordinator {

void RunCancellation::OnCancel(std::function<void()> stop) {
  {
    absl::MutexLock lock(&mu_);
    if (!cancelled_) {
      stop_ = std::move(stop);
      return;
    }
  }
  if (stop) stop();
}

void RunCancellation::Cancel() {
  std::function<void()> stop;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    stop.swap(stop_);
  }
  if (stop) stop();
}

bool RunCancellation::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

}  // namespace arbor::coordinator
