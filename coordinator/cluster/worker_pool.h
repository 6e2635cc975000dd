// The coordinator's view of its workers: who they are, whether they are alive, how loaded they
// are, and where new jobs should go (docs/ARCHITECTURE.md §3).
//
// Workers arrive two ways. A static `--workers a,b` list: the pool dials each address and asks
// Info, retrying with exponential backoff, so the coordinator starts even when a worker is late;
// afterwards a monitor thread polls Worker.Health. Or dynamic registration over the Cluster API
// (RegisterWorker, idempotent by address) followed by Heartbeats. A worker silent for longer
// than `heartbeat_timeout` (read from an injected Clock) becomes DEAD; DrainWorker makes one
// DRAINING. Listeners learn of both so the job layer can re-home the worker's jobs.
//
// A static worker that has not answered yet is listed as DEAD (it cannot take jobs) under its
// address; once Info answers it takes the id it reports and becomes READY.
//
// Each life of a worker is an *incarnation*: a registration by a new process (another
// WorkerInfo.instance_id) or after the worker was presumed dead starts a new one, with a fresh
// channel (the old one may sit in gRPC's reconnect backoff, failing calls fast with "Connection
// refused" for seconds). Failures that jobs saw on an older incarnation neither kill nor exclude
// the new one. A worker that stops (SIGTERM) deregisters: DRAINING at once, then DEAD when its
// heartbeats stop.
#ifndef ARBOR_COORDINATOR_CLUSTER_WORKER_POOL_H_
#define ARBOR_COORDINATOR_CLUSTER_WORKER_POOL_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "arbor/v1/cluster.pb.h"
#include "arbor/v1/worker.grpc.pb.h"
#include "base/clock.h"
#include "coordinator/cluster/model_match.h"
#include "coordinator/cluster/routing.h"

namespace arbor::coordinator {

struct WorkerPoolOptions {
  absl::Duration heartbeat_interval = absl::Seconds(2);      // Asked of registered workers.
  absl::Duration heartbeat_timeout = absl::Seconds(10);      // Silence longer than this → DEAD.
  absl::Duration poll_interval = absl::Seconds(2);           // Health polls of static workers.
  absl::Duration rpc_timeout = absl::Seconds(5);             // Info and Health calls.
  absl::Duration backoff_initial = absl::Milliseconds(200);  // Dialling a silent static worker.
  absl::Duration backoff_max = absl::Seconds(10);
  absl::Duration monitor_tick = absl::Milliseconds(250);  // How often the monitor looks.
  RoutingOptions routing;
  // This coordinator's epoch (RunRequest.owner_epoch): sent with Health polls and in Cluster
  // replies, so workers keep our sequences' lease alive and drop them when we are gone.
  uint64_t epoch = 0;
  // The model this coordinator serves: a worker of another (model_match.h) is refused at
  // registration, and a static one stays DEAD with the reason in its WorkerStatus.refused.
  ServedModelIdentity model;
};

// Something the job layer must react to: the worker's jobs need a new home.
struct WorkerEvent {
  enum Kind { kDied, kDraining };
  std::string worker_id;
  Kind kind;
  std::string reason;
};

// What a caller needs to talk to one worker. The stub stays valid after the worker leaves.
struct WorkerHandle {
  std::string worker_id;
  std::string address;
  std::shared_ptr<arbor::v1::Worker::StubInterface> stub;
  arbor::v1::WorkerInfo info;
  uint64_t incarnation = 0;  // Which life of the worker this handle talks to.
  uint64_t owner_epoch = 0;  // WorkerPoolOptions::epoch: the owner of the sequences we create.
};

class WorkerPool {
 public:
  using StubFactory =
      std::function<std::shared_ptr<arbor::v1::Worker::StubInterface>(const std::string&)>;
  using Listener = std::function<void(const WorkerEvent&)>;

  // Plain-text gRPC channels to the worker addresses.
  static StubFactory InsecureStubs();

  // `clock` must outlive the pool. No thread runs until StartMonitor.
  WorkerPool(WorkerPoolOptions options, base::Clock* clock, StubFactory stubs = InsecureStubs());
  ~WorkerPool();  // Stops the monitor.
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Adds a static worker (DEAD until its Info answers). INVALID_ARGUMENT for a malformed
  // address; adding a known address again changes nothing.
  absl::Status AddStatic(const std::string& address);

  // RegisterWorker: adds or refreshes the worker at `address`, READY unless it is draining.
  // Its id is info.worker_id, or the address when empty. ALREADY_EXISTS when that id belongs
  // to a live worker at another address; FAILED_PRECONDITION, naming both models, when it
  // serves another model than options.model.
  absl::StatusOr<std::string> Register(const std::string& address,
                                       const arbor::v1::WorkerInfo& info);

  struct HeartbeatReply {
    bool known = false;  // False: unknown or presumed dead; the worker should register again.
    bool drain = false;
  };
  HeartbeatReply Heartbeat(const std::string& worker_id, const arbor::v1::HealthResponse& load);

  // Stops routing to the worker and tells listeners; returns the jobs homed there.
  // NOT_FOUND for an unknown id. Draining twice is harmless (no second event).
  absl::StatusOr<int> Drain(const std::string& worker_id);
  // UndrainWorker: routes to the worker again: READY at its next heartbeat that reports it
  // serving (a static worker at once); a DEAD one stays so until it answers. NOT_FOUND for an
  // unknown id.
  absl::Status Undrain(const std::string& worker_id);
  // DeregisterWorker: the worker is stopping; Drain, checked against the registering process
  // (FAILED_PRECONDITION for another instance_id, e.g. a late call from a replaced process).
  absl::StatusOr<int> Deregister(const std::string& worker_id, uint64_t instance_id);

  // The job layer saw incarnation `incarnation` of the worker fail (e.g. UNAVAILABLE): presume
  // it dead now, unless the worker has come back since (a newer incarnation) or is draining
  // (it refuses new runs with UNAVAILABLE; heartbeats and polls settle whether it lives).
  void MarkDead(const std::string& worker_id, uint64_t incarnation, const std::string& reason);
  // Whether `incarnation` is the worker's current life (false for an unknown worker).
  bool IsCurrent(const std::string& worker_id, uint64_t incarnation) const;
  uint64_t epoch() const { return options_.epoch; }

  // Picks a worker for a new job (routing.h) among READY workers not in `exclude`, counts the
  // job as homed there and remembers the prompt's prefix for affinity. UNAVAILABLE when no
  // worker qualifies.
  absl::StatusOr<RoutingDecision> RouteJob(absl::Span<const int32_t> prompt_tokens,
                                           const absl::flat_hash_set<std::string>& exclude);
  // A job homed on `worker_id` finished or moved away.
  void JobLeft(const std::string& worker_id);

  // NOT_FOUND for an unknown id.
  absl::StatusOr<WorkerHandle> Get(const std::string& worker_id) const;
  // The model of a READY worker, for validating requests; UNAVAILABLE when none is ready.
  absl::StatusOr<arbor::v1::ModelInfo> Model() const;
  // Every worker, ordered by id.
  std::vector<arbor::v1::WorkerStatus> List() const;
  int ready_count() const;

  // Called (outside the pool's lock, from whichever thread noticed) on every death and drain.
  void AddListener(Listener listener);

  // One monitor pass: marks silent workers DEAD and polls the static workers that are due
  // (blocking on their RPCs, outside the lock). The monitor thread calls it; tests call it
  // directly with a fake clock.
  void Tick();
  // Starts the background thread that calls Tick every `monitor_tick` until destruction.
  void StartMonitor();

 private:
  struct Entry;
  struct PollResult;

  Entry* FindById(const std::string& worker_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const Entry* FindById(const std::string& worker_id) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void SetDead(Entry& entry, const std::string& reason, std::vector<WorkerEvent>& events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A worker that answers but serves another model: DEAD, with `why` in its status.
  void Refuse(Entry& entry, const absl::Status& why, std::vector<WorkerEvent>& events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A process of another model registers at `address`: whatever worker was known there is gone
  // (its jobs move) and the refusal is logged.
  void RefuseRegistration(const std::string& address, const absl::Status& why);
  void SetDraining(Entry& entry, const std::string& reason, std::vector<WorkerEvent>& events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drain and Deregister: drains the worker (checked against `instance_id` when given), tells
  // listeners, returns the jobs homed there.
  absl::StatusOr<int> StartDraining(const std::string& worker_id,
                                    std::optional<uint64_t> instance_id, const std::string& reason);
  void ApplyLoad(Entry& entry, const arbor::v1::HealthResponse& load, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The worker's own word on serving (its Health): one that stops serving untold (its device
  // failed) leaves routing as a drained one does, its jobs told to move; it is READY again when
  // it serves and no drain was asked.
  void FollowServing(Entry& entry, bool serving, std::vector<WorkerEvent>& events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Apply(const PollResult& result, absl::Time now, std::vector<WorkerEvent>& events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PollResult Poll(const std::string& address,
                  const std::shared_ptr<arbor::v1::Worker::StubInterface>& stub,
                  bool need_info) const;
  void Notify(const std::vector<WorkerEvent>& events);
  int AffinityBlockSize() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const WorkerPoolOptions options_;
  base::Clock* const clock_;
  const StubFactory stubs_;

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  PrefixAffinity affinity_ ABSL_GUARDED_BY(mu_);
  std::vector<Listener> listeners_ ABSL_GUARDED_BY(mu_);
  uint64_t incarnations_ ABSL_GUARDED_BY(mu_) = 0;  // The last incarnation handed out.

  absl::Mutex tick_mu_;  // One Tick at a time.
  absl::Notification stop_;
  std::thread monitor_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_CLUSTER_WORKER_POOL_H_
