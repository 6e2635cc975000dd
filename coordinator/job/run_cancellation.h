// How a job stops a Run it no longer wants (cancelled, disconnected, past its deadline, or ended
// some other way while the Run was in flight): the job cancels, the worker client turns that into
// cancelling its call, and the worker, which polls its call once a step, stops the Run's items
// within one step. Either side may come first — a job may end before the client has even sent
// the call — so the stop runs exactly once, when both have happened. Thread-safe.
#ifndef ARBOR_COORDINATOR_JOB_RUN_CANCELLATION_H_
#define ARBOR_COORDINATOR_JOB_RUN_CANCELLATION_H_

#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace arbor::coordinator {

class RunCancellation {
 public:
  // The client says how to stop its call; `stop` runs now when the job already cancelled. It
  // must not call back into the job synchronously (the job may hold its lock elsewhere).
  void OnCancel(std::function<void()> stop);
  // The job no longer wants the Run: stops the call once the client has said how.
  void Cancel();
  bool cancelled() const;

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> stop_ ABSL_GUARDED_BY(mu_);
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_RUN_CANCELLATION_H_
