// The standard process_* metrics Prometheus client libraries export (CPU time, resident and
// virtual memory, open and maximum file descriptors, start time), read from /proc at each scrape
// so that dashboards and alerts written for any Prometheus target work on Arbor's processes too.
#ifndef ARBOR_METRICS_PROCESS_METRICS_H_
#define ARBOR_METRICS_PROCESS_METRICS_H_

#include "absl/synchronization/mutex.h"
#include "metrics/registry.h"

namespace arbor::metrics {

class ProcessMetrics {
 public:
  // Registers the families on `registry`, which must outlive this object.
  explicit ProcessMetrics(Registry& registry);

  // Reads /proc/self and updates every series; a value that cannot be read keeps its last one.
  void Refresh();

 private:
  absl::Mutex mu_;  // Scrapes may overlap; the CPU counter advances by the difference.
  Counter& cpu_seconds_;
  double published_cpu_seconds_ ABSL_GUARDED_BY(mu_) = 0.0;
  Gauge& resident_bytes_;
  Gauge& virtual_bytes_;
  Gauge& open_fds_;
  Gauge& max_fds_;
  Gauge& start_time_seconds_;
};

}  // namespace arbor::metrics

#endif  // ARBOR_METRICS_PROCESS_METRICS_H_
