// Admission control for generation jobs: at most `max_active` jobs run at once and at most
// `max_queued` wait behind them; anything beyond is refused with RESOURCE_EXHAUSTED so overload
// is pushed back to clients instead of growing memory and latency without bound
// (docs/ARCHITECTURE.md §7). It exports the running and queued jobs as gauges and counts its
// refusals (docs/API.md).
#ifndef ARBOR_COORDINATOR_CLUSTER_ADMISSION_H_
#define ARBOR_COORDINATOR_CLUSTER_ADMISSION_H_

#include <deque>
#include <optional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "metrics/registry.h"

namespace arbor::coordinator {

struct AdmissionLimits {
  int max_active = 64;   // Jobs running at once, >= 1.
  int max_queued = 256;  // Jobs waiting for a slot, >= 0.
};

enum class Admitted { kRunNow, kQueued };

struct AdmissionStats {
  int active = 0;
  int queued = 0;
};

// Thread-safe. Jobs are identified by their id; a queued job starts in FIFO order.
class Admission {
 public:
  // `registry` receives the gauges and the rejection counter; it must outlive this.
  explicit Admission(AdmissionLimits limits,
                     metrics::Registry& registry = metrics::DefaultRegistry());

  // kRunNow when a slot is free, kQueued when the queue has room, RESOURCE_EXHAUSTED (naming
  // both limits) otherwise; ALREADY_EXISTS when `job_id` is already admitted.
  absl::StatusOr<Admitted> Admit(const std::string& job_id);

  // Removes a running or queued job (finished, failed or cancelled). When that frees a running
  // slot, the oldest queued job takes it and its id is returned: the caller starts it.
  // Unknown ids are ignored (release is idempotent).
  std::optional<std::string> Release(const std::string& job_id);

  AdmissionStats stats() const;
  const AdmissionLimits& limits() const { return limits_; }

 private:
  void Publish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const AdmissionLimits limits_;
  metrics::Gauge& active_jobs_;
  metrics::Gauge& queued_jobs_;
  metrics::Counter& rejections_;
  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> active_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_CLUSTER_ADMISSION_H_
