// Time as a server sees it. Heartbeat timeouts, job deadlines and backoff read the time
// through this interface so tests can drive them with a fake clock instead of sleeping.
#ifndef ARBOR_BASE_CLOCK_H_
#define ARBOR_BASE_CLOCK_H_

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace arbor::base {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

// Wall-clock time. Stateless; one shared instance serves every user.
class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  static Clock* Get() {
    static RealClock clock;
    return &clock;
  }
};

}  // namespace arbor::base

#endif  // ARBOR_BASE_CLOCK_H_
