// Server-streaming of a job's events to one gRPC call (Generate and Watch) with the callback
// API, so no thread waits per stream: the job's EventLog is replayed and then followed live;
// one write is in flight at a time and later events queue behind it; the call ends OK once the
// `finished` event is written. For Generate the stream owns the job: the call being cancelled
// (client cancel, disconnect, or its gRPC deadline) cancels the job, which releases its KV.
// A client that reconnects says how many events it has (Watch's last-event-id metadata): those
// are not sent again, so each event reaches it once even across a coordinator restart, where a
// resumed job emits its events again from the first.
#ifndef ARBOR_COORDINATOR_SERVICE_EVENT_STREAM_H_
#define ARBOR_COORDINATOR_SERVICE_EVENT_STREAM_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "arbor/v1/generation.pb.h"
#include "coordinator/service/job_registry.h"
#include "grpcpp/support/server_callback.h"

namespace arbor::coordinator {

// The metadata key by which a reconnecting Watch says how many of the job's events it has, as
// an SSE client's Last-Event-ID does (event ids count from 1).
inline constexpr char kLastEventId[] = "last-event-id";

class EventStream final : public grpc::ServerWriteReactor<arbor::v1::GenerateEvent> {
 public:
  // The reactor deletes itself when the call is done. The first `skip` events are not sent.
  static EventStream* Open(std::shared_ptr<JobRecord> record, bool owns_job, int64_t skip = 0) {
    std::shared_ptr<EventLog> events(record, &record->events);
    return new EventStream(std::move(events), owns_job ? record->job : nullptr, skip);
  }
  // The events of a job that ended before this process started (the job store's).
  static EventStream* OpenStored(const std::vector<arbor::v1::GenerateEvent>& events,
                                 int64_t skip);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // `owned_job`: the job a cancelled call cancels (Generate's); null for none.
  EventStream(std::shared_ptr<EventLog> events, std::shared_ptr<Job> owned_job, int64_t skip);
  void Push(const arbor::v1::GenerateEvent& event);
  // Finishes the call with `status` unless it was already; a write must not be in flight.
  void FinishOnce(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<EventLog> events_;
  const std::shared_ptr<Job> owned_job_;
  uint64_t subscription_ = 0;

  absl::Mutex mu_;
  std::deque<arbor::v1::GenerateEvent> queue_ ABSL_GUARDED_BY(mu_);
  arbor::v1::GenerateEvent current_ ABSL_GUARDED_BY(mu_);  // The write in flight.
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // Finish was called.
  int64_t skip_ ABSL_GUARDED_BY(mu_);            // Events still to leave out.
};

// A stream that fails at once with `status` (a request refused before any job existed).
class FailedStream final : public grpc::ServerWriteReactor<arbor::v1::GenerateEvent> {
 public:
  explicit FailedStream(const absl::Status& status);
  void OnDone() override { delete this; }
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_EVENT_STREAM_H_
