// Who owns the worker's sequences, and for how long: the lease of each coordinator epoch
// (RunRequest.owner_epoch). A coordinator that crashes never releases its sequences, so without
// leases their KV would stay held forever. Every call that carries an epoch — Run,
// Release, Health polls of a static worker — and every heartbeat the coordinator answers renews
// its lease; a lease not renewed for `lease` lapses and the epoch's sequences are released. A
// worker that registers and learns its coordinator has a new epoch revokes the old one at once.
// Epoch 0 (direct clients, older coordinators) has no lease: its sequences live until released.
#ifndef ARBOR_WORKER_SERVICE_SEQUENCE_LEASES_H_
#define ARBOR_WORKER_SERVICE_SEQUENCE_LEASES_H_

#include <cstdint>
#include <functional>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace arbor::worker {

class SequenceLeases {
 public:
  // Called (from the leases' thread or a Revoke caller) to release an epoch's sequences.
  using ReleaseOwner = std::function<void(uint64_t owner)>;

  // Starts a thread that looks for lapsed leases every lease / 4.
  SequenceLeases(absl::Duration lease, ReleaseOwner release);
  ~SequenceLeases();
  SequenceLeases(const SequenceLeases&) = delete;
  SequenceLeases& operator=(const SequenceLeases&) = delete;

  // The owner `epoch` was heard from now (no-op for 0).
  void Renew(uint64_t epoch);
  // The owner `epoch` is gone (its coordinator came back under another epoch): release now.
  void Revoke(uint64_t epoch);
  // Releases the epochs not renewed within the lease as of `now`; the thread calls it, tests
  // call it directly.
  void ExpireAt(absl::Time now);

 private:
  const absl::Duration lease_;
  const ReleaseOwner release_;
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, absl::Time> renewed_ ABSL_GUARDED_BY(mu_);
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_SERVICE_SEQUENCE_LEASES_H_
