// Keeps a worker known to its coordinator: registers over the Cluster API, then sends heartbeats
// carrying the worker's load, re-registering when the coordinator has forgotten it (e.g. after
// a coordinator restart) and relaying a drain request.
#ifndef ARBOR_WORKER_REGISTRATION_H_
#define ARBOR_WORKER_REGISTRATION_H_

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
  std::function<arbor::v1::HealthResponse()> load;   // Current load, sampled per heartbeat.
  std::function<void()> on_drain;                    // Coordinator asked us to drain.
  absl::Duration retry_interval = absl::Seconds(1);  // Between failed registration attempts.
};

class Registration {
 public:
  // Starts a background thread that registers and heartbeats until destruction.
  explicit Registration(RegistrationOptions options);
  ~Registration();
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  void Loop();
  // One RegisterWorker call; on success sets worker_id_ and interval_.
  bool Register();
  // One Heartbeat; false when the coordinator no longer knows us or is unreachable.
  bool Beat();

  RegistrationOptions options_;
  std::unique_ptr<arbor::v1::Cluster::Stub> stub_;
  std::string worker_id_;
  absl::Duration interval_ = absl::Seconds(1);
  bool drain_signalled_ = false;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_REGISTRATION_H_
