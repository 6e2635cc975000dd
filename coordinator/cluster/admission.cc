#include "coordinator/cluster/admission.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace arbor::coordinator {

Admission::Admission(AdmissionLimits limits, metrics::Registry& registry)
    : limits_{std::max(1, limits.max_active), std::max(0, limits.max_queued)},
      active_jobs_(
          registry.AddGauge("arbor_coordinator_active_jobs", "Jobs running (admitted).").Get()),
      queued_jobs_(registry
                       .AddGauge("arbor_coordinator_queued_jobs",
                                 "Jobs waiting for a running slot (the admission queue).")
                       .Get()),
      rejections_(registry
                      .AddCounter("arbor_coordinator_admission_rejections_total",
                                  "Jobs refused with RESOURCE_EXHAUSTED because the running "
                                  "slots and the queue were full.")
                      .Get()) {}

absl::StatusOr<Admitted> Admission::Admit(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  if (active_.contains(job_id) || std::find(queue_.begin(), queue_.end(), job_id) != queue_.end()) {
    return absl::AlreadyExistsError(absl::StrCat("job ", job_id, " is already admitted"));
  }
  if (static_cast<int>(active_.size()) < limits_.max_active) {
    active_.insert(job_id);
    Publish();
    return Admitted::kRunNow;
  }
  if (static_cast<int>(queue_.size()) < limits_.max_queued) {
    queue_.push_back(job_id);
    Publish();
    return Admitted::kQueued;
  }
  rejections_.Inc();
  return absl::ResourceExhaustedError(absl::StrCat(
      "server busy: ", active_.size(), " jobs running (max_active_jobs ", limits_.max_active,
      ") and ", queue_.size(), " queued (max_queued_jobs ", limits_.max_queued, "); retry later"));
}

std::optional<std::string> Admission::Release(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  std::optional<std::string> next;
  if (active_.erase(job_id) == 0) {
    queue_.erase(std::remove(queue_.begin(), queue_.end(), job_id), queue_.end());
  } else if (!queue_.empty()) {
    next = std::move(queue_.front());
    queue_.pop_front();
    active_.insert(*next);
  }
  Publish();
  return next;
}

void Admission::Publish() {
  active_jobs_.Set(static_cast<double>(active_.size()));
  queued_jobs_.Set(static_cast<double>(queue_.size()));
}

AdmissionStats Admission::stats() const {
  absl::MutexLock lock(&mu_);
  return {static_cast<int>(active_.size()), static_cast<int>(queue_.size())};
}

}  // namespace arbor::coordinator
