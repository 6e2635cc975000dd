// The standard process_* metrics Prometheus client libraries export (CPU time, resident and
// virtual memory, open and maximum file descriptors, start time), read from /proc at each scrape
// so that dashboards and alerts written for any Prometheus target work on Arbor's processes too.
#ifndef ARBOR_METRICS_PROCESS_METRICS_H_
#define ARBOR_METRICS_PROCESS_METRICS_H_

#include "metrics/registry.h"

namespace arbor::metrics {

class ProcessMetrics {
 public:
  // Registers the families on `registry`, which must outlive this object.
  explicit ProcessMetrics(Registry& registry);

  // Reads /proc/self and updates every series; a value that cannot be read keeps its last one.
  // The CPU counter advances by what /proc shows beyond its value, so refreshes that overlap, or
  // two of these on one registry, never count a second twice.
  void Refresh();

 private:
  Counter& cpu_seconds_;
  Gauge& resident_bytes_;
  Gauge& virtual_bytes_;
  Gauge& open_fds_;
  Gauge& max_fds_;
  Gauge& start_time_seconds_;
};

}  // namespace arbor::metrics

#endif  // ARBOR_METRICS_PROCESS_METRICS_H_
