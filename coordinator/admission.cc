#include "coordinator/admission.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace arbor::coordinator {

Admission::Admission(AdmissionLimits limits)
    : limits_{std::max(1, limits.max_active), std::max(0, limits.max_queued)} {}

absl::StatusOr<Admitted> Admission::Admit(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  if (active_.contains(job_id) || std::find(queue_.begin(), queue_.end(), job_id) != queue_.end()) {
    return absl::AlreadyExistsError(absl::StrCat("job ", job_id, " is already admitted"));
  }
  if (static_cast<int>(active_.size()) < limits_.max_active) {
    active_.insert(job_id);
    return Admitted::kRunNow;
  }
  if (static_cast<int>(queue_.size()) < limits_.max_queued) {
    queue_.push_back(job_id);
    return Admitted::kQueued;
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "server busy: ", active_.size(), " jobs running (max_active_jobs ", limits_.max_active,
      ") and ", queue_.size(), " queued (max_queued_jobs ", limits_.max_queued, "); retry later"));
}

std::optional<std::string> Admission::Release(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  if (active_.erase(job_id) == 0) {
    queue_.erase(std::remove(queue_.begin(), queue_.end(), job_id), queue_.end());
    return std::nullopt;
  }
  if (queue_.empty()) return std::nullopt;
  std::string next = std::move(queue_.front());
  queue_.pop_front();
  active_.insert(next);
  return next;
}

AdmissionStats Admission::stats() const {
  absl::MutexLock lock(&mu_);
  return {static_cast<int>(active_.size()), static_cast<int>(queue_.size())};
}

}  // namespace arbor::coordinator
