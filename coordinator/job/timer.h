// Delayed callbacks for the job layer: a job out of KV on its worker waits a backoff before it
// tries again (JobEnvironment::schedule_after). The interface lets tests fire callbacks by hand
// instead of sleeping; ThreadTimer is the one the coordinator runs.
#ifndef ARBOR_COORDINATOR_JOB_TIMER_H_
#define ARBOR_COORDINATOR_JOB_TIMER_H_

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace arbor::coordinator {

class Timer {
 public:
  virtual ~Timer() = default;
  // Runs `callback` once, on another thread, no earlier than `delay` from now.
  virtual void ScheduleAfter(absl::Duration delay, std::function<void()> callback) = 0;
};

// One thread over a min-heap of deadlines; callbacks run on that thread, one at a time, in
// deadline order (ties in scheduling order). Destruction drops the callbacks not yet due and
// waits for the one running, so a callback may capture what outlives the timer only.
class ThreadTimer final : public Timer {
 public:
  ThreadTimer();
  ~ThreadTimer() override;
  ThreadTimer(const ThreadTimer&) = delete;
  ThreadTimer& operator=(const ThreadTimer&) = delete;

  void ScheduleAfter(absl::Duration delay, std::function<void()> callback) override;

 private:
  struct Entry {
    absl::Time due;
    uint64_t order = 0;
    std::function<void()> callback;
  };
  // Heap order: the top is the earliest deadline, the first scheduled among equals.
  static bool Later(const Entry& a, const Entry& b) {
    return a.due != b.due ? a.due > b.due : a.order > b.order;
  }

  void Loop();

  absl::Mutex mu_;
  std::vector<Entry> heap_ ABSL_GUARDED_BY(mu_);
  uint64_t next_order_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_TIMER_H_
