// Keeps a worker known to its coordinator: registers over the Cluster API, then sends heartbeats
// carrying the worker's load, re-registering when the coordinator has forgotten it (e.g. after
// a coordinator restart) and relaying a drain request. It reports the coordinator's epoch as it
// answers (renewing the lease of the sequences it owns, sequence_leases.h) and when a
// re-registration finds a new one (the old coordinator is gone). Leave() deregisters a worker
// that is stopping.
#ifndef ARBOR_WORKER_SERVICE_REGISTRATION_H_
#define ARBOR_WORKER_SERVICE_REGISTRATION_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "arbor/v1/cluster.grpc.pb.h"

namespace arbor::worker {

struct RegistrationOptions {
  std::string coordinator;  // Coordinator address, host:port.
  std::string advertise;    // Address the coordinator should dial to reach this worker.
  arbor::v1::WorkerInfo info;
  std::function<arbor::v1::HealthResponse()> load;  // Current load, sampled per heartbeat.
  std::function<void()> on_drain;                   // Coordinator asked us to drain.
  std::function<void()> on_undrain;                 // ...and then to take jobs again.
  // The coordinator answered a registration or heartbeat under this epoch.
  std::function<void(uint64_t epoch)> on_coordinator_alive;
  // A registration found a new epoch: the coordinator of `old_epoch` is gone.
  std::function<void(uint64_t old_epoch)> on_coordinator_replaced;
  absl::Duration retry_interval = absl::Seconds(1);  // Between failed registration attempts.
};

class Registration {
 public:
  // Starts a background thread that registers and heartbeats until destruction.
  explicit Registration(RegistrationOptions options);
  ~Registration();
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

  // The worker is stopping: stops the heartbeats and calls DeregisterWorker, so that the
  // coordinator sends it no new work and moves its jobs (instead of presuming it alive until
  // the heartbeats lapse). Best effort, bounded by `timeout`; idempotent.
  void Leave(absl::Duration timeout);

 private:
  void Loop();
  // One RegisterWorker call; on success sets worker_id_ and interval_.
  bool Register();
  // One Heartbeat; false when the coordinator no longer knows us or is unreachable.
  bool Beat();
  // Ends the loop (and its thread); idempotent.
  void Stop();

  RegistrationOptions options_;
  std::unique_ptr<arbor::v1::Cluster::Stub> stub_;
  std::string worker_id_;
  uint64_t epoch_ = 0;  // The coordinator's, as last answered; 0 before the first answer.
  absl::Duration interval_ = absl::Seconds(1);
  bool drain_signalled_ = false;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_SERVICE_REGISTRATION_H_
