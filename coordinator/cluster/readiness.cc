#include "coordinator/cluster/readiness.h"

namespace arbor::coordinator {

ReadinessReporter::ReadinessReporter(const WorkerPool* pool, std::function<void(bool)> publish,
                                     absl::Duration period)
    : pool_(pool), publish_(std::move(publish)) {
  bool ready = pool_->ready_count() > 0;
  publish_(ready);
  thread_ = std::thread([this, period, ready]() mutable {
    while (!stop_.WaitForNotificationWithTimeout(period)) {
      const bool now = pool_->ready_count() > 0;
      if (now != ready) publish_(ready = now);
    }
  });
}

ReadinessReporter::~ReadinessReporter() {
  stop_.Notify();
  thread_.join();
}

}  // namespace arbor::coordinator
