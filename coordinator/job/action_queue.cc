#include "coordinator/job/action_queue.h"

#include <utility>

namespace arbor::coordinator {

void ActionQueue::Push(std::function<void()> action) {
  absl::MutexLock lock(&mu_);
  actions_.push_back(std::move(action));
}

void ActionQueue::Drain() {
  {
    absl::MutexLock lock(&mu_);
    if (draining_) return;  // That thread will run what was queued, in order.
    draining_ = true;
  }
  for (;;) {
    std::deque<std::function<void()>> batch;
    {
      absl::MutexLock lock(&mu_);
      if (actions_.empty()) {
        draining_ = false;
        return;
      }
      batch.swap(actions_);
    }
    for (std::function<void()>& action : batch) action();
  }
}

}  // namespace arbor::coordinator
