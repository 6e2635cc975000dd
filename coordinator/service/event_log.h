// Every event a job emitted, in order, so that a stream opened at any time (Watch, or Generate
// itself) first replays what happened and then follows live events until the job's `finished`
// event, which closes the log. Thread-safe.
#ifndef ARBOR_COORDINATOR_SERVICE_EVENT_LOG_H_
#define ARBOR_COORDINATOR_SERVICE_EVENT_LOG_H_

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "arbor/v1/generation.pb.h"

namespace arbor::coordinator {

class EventLog {
 public:
  // Receives one event; called under the log's lock, in order, so it must be quick and must
  // not call back into the log (queue the event and return).
  using Subscriber = std::function<void(const arbor::v1::GenerateEvent&)>;

  // Records `event` and hands it to every subscriber. A `finished` event closes the log;
  // events after it are ignored.
  void Append(const arbor::v1::GenerateEvent& event);

  // Hands `subscriber` every event so far and then each new one, with nothing lost or repeated
  // in between. Returns the id for Unsubscribe. A closed log replays only.
  uint64_t Subscribe(Subscriber subscriber);
  // After it returns, the subscriber is never called again.
  void Unsubscribe(uint64_t id);

  bool closed() const;
  std::vector<arbor::v1::GenerateEvent> events() const;
  // The bytes the recorded events take (their SpaceUsedLong), for the finished jobs' budget.
  size_t SpaceUsedBytes() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<arbor::v1::GenerateEvent> events_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Subscriber> subscribers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_EVENT_LOG_H_
