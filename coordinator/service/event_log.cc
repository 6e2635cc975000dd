#include "coordinator/service/event_log.h"

namespace arbor::coordinator {

void EventLog::Append(const arbor::v1::GenerateEvent& event) {
  absl::MutexLock lock(&mu_);
  if (closed_) return;
  events_.push_back(event);
  for (auto& [id, subscriber] : subscribers_) subscriber(event);
  if (event.has_finished()) {
    closed_ = true;
    subscribers_.clear();  // Nothing more will come.
  }
}

uint64_t EventLog::Subscribe(Subscriber subscriber) {
  absl::MutexLock lock(&mu_);
  for (const arbor::v1::GenerateEvent& event : events_) subscriber(event);
  const uint64_t id = next_id_++;
  if (!closed_) subscribers_.emplace(id, std::move(subscriber));
  return id;
}

void EventLog::Unsubscribe(uint64_t id) {
  absl::MutexLock lock(&mu_);
  subscribers_.erase(id);
}

bool EventLog::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

std::vector<arbor::v1::GenerateEvent> EventLog::events() const {
  absl::MutexLock lock(&mu_);
  return events_;
}

size_t EventLog::SpaceUsedBytes() const {
  absl::MutexLock lock(&mu_);
  size_t bytes = events_.capacity() * sizeof(arbor::v1::GenerateEvent);
  for (const arbor::v1::GenerateEvent& event : events_) {
    bytes += event.SpaceUsedLong() - sizeof(event);  // Its object is counted in the capacity.
  }
  return bytes;
}

}  // namespace arbor::coordinator
