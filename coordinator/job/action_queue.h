// A job's side effects — worker calls and events — queued while the job holds its lock and run
// after it is released, in the order they were queued, by whichever thread drains the queue. So
// the event sink and the worker client may call back into the job (accessors, Cancel) without
// deadlock, and events reach the sink in the order they happened. Thread-safe.
#ifndef ARBOR_COORDINATOR_JOB_ACTION_QUEUE_H_
#define ARBOR_COORDINATOR_JOB_ACTION_QUEUE_H_

#include <deque>
#include <functional>

#include "absl/synchronization/mutex.h"

namespace arbor::coordinator {

class ActionQueue {
 public:
  void Push(std::function<void()> action) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs every queued action, those queued meanwhile too, in order; when another thread is
  // already draining, that thread runs them and this returns at once. Call it holding no lock
  // an action may take.
  void Drain() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  std::deque<std::function<void()>> actions_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_ACTION_QUEUE_H_
