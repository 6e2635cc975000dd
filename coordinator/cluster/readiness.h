// The coordinator's readiness over grpc.health.v1: the named service "arbor.ready" is SERVING
// only while at least one worker is READY, whereas the whole-server service "" only says that
// the process is up. A readiness probe (Kubernetes `grpc: {service: arbor.ready}`, grpcurl)
// thus keeps clients away from a coordinator that cannot run jobs — as HTTP /health does.
#ifndef ARBOR_COORDINATOR_CLUSTER_READINESS_H_
#define ARBOR_COORDINATOR_CLUSTER_READINESS_H_

#include <functional>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "coordinator/cluster/worker_pool.h"

namespace arbor::coordinator {

inline constexpr char kReadyService[] = "arbor.ready";

class ReadinessReporter {
 public:
  // Publishes `pool`'s readiness (ready_count() > 0) now and then every `period` when it
  // changed, from a thread of its own, until destruction. `pool` must outlive the reporter.
  ReadinessReporter(const WorkerPool* pool, std::function<void(bool ready)> publish,
                    absl::Duration period);
  ~ReadinessReporter();
  ReadinessReporter(const ReadinessReporter&) = delete;
  ReadinessReporter& operator=(const ReadinessReporter&) = delete;

 private:
  const WorkerPool* const pool_;
  const std::function<void(bool)> publish_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_CLUSTER_READINESS_H_
