// A manually advanced Clock for tests: time moves only when the test says so, which makes
// timeouts deterministic and tests fast. Thread-safe, so a background thread may read it.
#ifndef ARBOR_BASE_FAKE_CLOCK_H_
#define ARBOR_BASE_FAKE_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"

namespace arbor::base {

class FakeClock final : public Clock {
 public:
  // Starts at a fixed, arbitrary instant so printed times are the same on every run.
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000)) : now_(start) {}

  absl::Time Now() const override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace arbor::base

#endif  // ARBOR_BASE_FAKE_CLOCK_H_
