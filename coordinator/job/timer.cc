#include "coordinator/job/timer.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"

namespace arbor::coordinator {

ThreadTimer::ThreadTimer() : thread_([this] { Loop(); }) {}

ThreadTimer::~ThreadTimer() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void ThreadTimer::ScheduleAfter(absl::Duration delay, std::function<void()> callback) {
  absl::MutexLock lock(&mu_);
  heap_.push_back(Entry{absl::Now() + delay, next_order_++, std::move(callback)});
  std::push_heap(heap_.begin(), heap_.end(), Later);
}

void ThreadTimer::Loop() {
  absl::MutexLock lock(&mu_);
  for (;;) {
    // Wakes on stop, on a new earliest deadline (the condition reads the heap's top), or when
    // the earliest one is due.
    const absl::Time due = heap_.empty() ? absl::InfiniteFuture() : heap_.front().due;
    const auto changed = [this, due]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop_ || (!heap_.empty() && heap_.front().due < due);
    };
    mu_.AwaitWithDeadline(absl::Condition(&changed), due);
    if (stop_) return;
    if (heap_.empty() || heap_.front().due > absl::Now()) continue;
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    std::function<void()> callback = std::move(heap_.back().callback);
    heap_.pop_back();
    mu_.Unlock();  // The callback may schedule again.
    callback();
    mu_.Lock();
  }
}

}  // namespace arbor::coordinator
