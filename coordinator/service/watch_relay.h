// Watch of a job that another coordinator on the same job store runs: this coordinator opens a
// Watch to the holder at the address the holder recorded with its lease (--advertise), with the
// caller's authorization and the count of events it has, and relays the events as they come.
// When the holder stops answering (it died), the client's stream stays open: the relay reads
// the store until a coordinator runs the job again (a survivor, or this one), and goes on from
// the events already sent, relayed from the new holder or followed live here, or from the
// store once the job has ended; the client gets every event once and the `finished` event. The
// wait is bounded (WatchRelayOptions); past it the call fails UNAVAILABLE saying why.
// The relayed Watch is marked as relayed (read_relay.h) and never relayed on.
//
// Each relay has a thread of its own, which reads the holder's stream (or waits for the
// takeover) and writes one event at a time, the next read only once the last write is done:
// a slow client slows the relay, not this coordinator's memory.
#ifndef ARBOR_COORDINATOR_SERVICE_WATCH_RELAY_H_
#define ARBOR_COORDINATOR_SERVICE_WATCH_RELAY_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "coordinator/service/job_registry.h"
#include "coordinator/service/read_relay.h"
#include "coordinator/store/job_store.h"
#include "grpcpp/support/server_callback.h"

namespace arbor::coordinator {

// Whether a stored job has not ended and runs on another coordinator, one that renews its lease.
bool RunsElsewhere(const StoredJob& stored, JobStore& store);

// OK for an empty `advertise` (--advertise) or host:port with a port; INVALID_ARGUMENT else.
absl::Status CheckAdvertise(const std::string& advertise);
// Where the other coordinators reach this one, recorded with its leases: `advertise` when set,
// else `bound` (its --listen with the port it bound) unless that host is a wildcard; empty when
// neither, and a Watch of this one's jobs sent to another then answers UNAVAILABLE naming it.
std::string AdvertisedAddress(const std::string& advertise, const std::string& bound);

struct WatchRelayOptions {
  // Once the holder stopped answering, a relay waits up to twice the job lease (--job_lease)
  // plus `restart` for a coordinator to run the job again: the lease to lapse, a survivor's
  // takeover scan (a renewal period, shorter than the lease), and its start of the job.
  absl::Duration lease = absl::Seconds(10);
  absl::Duration restart = absl::Seconds(10);
  // How often the store is read while waiting.
  absl::Duration poll_every = absl::Milliseconds(200);
  PeerDial dial;  // How the holder is reached (read_relay.h).
};

class WatchRelay final : public grpc::ServerWriteReactor<arbor::v1::GenerateEvent> {
 public:
  // Streams job `job_id`, which another coordinator runs, to the call; its client has the
  // job's first `seen` events, and `authorization` (its metadata, empty for none) is passed to
  // the holder, which authenticates the caller again. The pointers must outlive the call;
  // the reactor deletes itself when the call is done.
  static WatchRelay* Open(const WatchRelayOptions& options, JobRegistry* registry, JobStore* store,
                          std::string job_id, std::string authorization, int64_t seen);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override { delete this; }

 private:
  WatchRelay(const WatchRelayOptions& options, JobRegistry* registry, JobStore* store,
             std::string job_id, std::string authorization, int64_t seen);
  // The thread's body: relays until the job's end or a failure, then finishes the call.
  void Run();
  // Sends the events from whoever has the job now, waiting for a takeover while nobody runs
  // it; OK once the client has every event.
  absl::Status Relay();
  // Relays the events `holder` streams; UNAVAILABLE when it does not answer (any longer).
  absl::Status RelayFrom(const JobLease& holder);
  // Sends the events of the job running (or ended) here.
  absl::Status FollowHere(JobRecord& record);
  // Sends the events of `events` the client does not have yet.
  absl::Status SendRest(const std::vector<arbor::v1::GenerateEvent>& events);
  // Writes `event` and waits until it is written; CANCELLED when the client went away.
  absl::Status Send(const arbor::v1::GenerateEvent& event);
  bool WriteDone() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !writing_; }
  bool CancelledOrEventHere() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return cancelled_ || !here_.empty();
  }
  // Waits up to `timeout` for the call to be cancelled; true when it was.
  bool WaitCancelled(absl::Duration timeout);
  // Why the wait for a coordinator to run the job again ends, from the store's last answer.
  absl::Status GaveUp(const absl::StatusOr<StoredJob>& stored, const absl::Status& last) const;

  const WatchRelayOptions& options_;
  JobRegistry* const registry_;
  JobStore* const store_;
  const std::string job_id_;
  const std::string authorization_;
  int64_t sent_;  // Events the client has: those it had and those sent. The thread's only.

  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool write_ok_ ABSL_GUARDED_BY(mu_) = true;
  arbor::v1::GenerateEvent current_;  // The write in flight; set while writing_ is false.
  grpc::ClientContext* upstream_ ABSL_GUARDED_BY(mu_) = nullptr;    // The holder's call, if open.
  std::deque<arbor::v1::GenerateEvent> here_ ABSL_GUARDED_BY(mu_);  // FollowHere's, unsent.
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_WATCH_RELAY_H_
