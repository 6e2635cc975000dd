#include "coordinator/service/watch_relay.h"

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/host_port.h"
#include "base/status_macros.h"
#include "coordinator/service/event_stream.h"
#include "rpc/grpc_status.h"
#include "spdlog/spdlog.h"

namespace arbor::coordinator {
namespace {

// Past this the wait for a coordinator to run the job again ends (WatchRelayOptions::lease).
absl::Duration TakeoverBound(const WatchRelayOptions& options) {
  return 2 * options.lease + options.restart;
}

}  // namespace

bool RunsElsewhere(const StoredJob& stored, JobStore& store) {
  return !stored.finished && !stored.lease.coordinator.empty() &&
         stored.lease.until > absl::Now() && !store.Holds(stored.accepted.job_id);
}

absl::Status CheckAdvertise(const std::string& advertise) {
  if (advertise.empty()) return absl::OkStatus();
  const absl::StatusOr<base::HostPort> address = base::ParseHostPort(advertise);
  if (address.ok() && address->port != 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--advertise: '", advertise,
                   "' is not host:port with a port other than 0, the address the other "
                   "coordinators reach this one's --listen at"));
}

std::string AdvertisedAddress(const std::string& advertise, const std::string& bound) {
  if (!advertise.empty()) return advertise;
  const absl::StatusOr<base::HostPort> address = base::ParseHostPort(bound);
  if (address.ok() && address->host != "0.0.0.0" && address->host != "::") return bound;
  spdlog::warn(
      "--listen {} is a wildcard address: the other coordinators on the job store cannot relay "
      "Watches of this one's jobs; give it --advertise HOST:PORT",
      bound);
  return "";
}

WatchRelay* WatchRelay::Open(const WatchRelayOptions& options, JobRegistry* registry,
                             JobStore* store, std::string job_id, std::string authorization,
                             int64_t seen) {
  auto* relay =
      new WatchRelay(options, registry, store, std::move(job_id), std::move(authorization), seen);
  // The thread touches the reactor no more once it finished the call, after which gRPC
  // deletes it (OnDone): nothing to join.
  std::thread([relay] { relay->Run(); }).detach();
  return relay;
}

WatchRelay::WatchRelay(const WatchRelayOptions& options, JobRegistry* registry, JobStore* store,
                       std::string job_id, std::string authorization, int64_t seen)
    : options_(options),
      registry_(registry),
      store_(store),
      job_id_(std::move(job_id)),
      authorization_(std::move(authorization)),
      sent_(seen) {}

void WatchRelay::Run() {
  const absl::Status status = Relay();
  Finish(rpc::ToGrpcStatus(status));
}

absl::Status WatchRelay::Relay() {
  absl::Time give_up = absl::InfiniteFuture();  // Set while nobody streams the job.
  absl::Status last = absl::OkStatus();         // Why the last holder did not.
  while (true) {
    if (absl::StatusOr<std::shared_ptr<JobRecord>> live = registry_->Find(job_id_); live.ok()) {
      return FollowHere(**live);
    }
    absl::StatusOr<StoredJob> stored = store_->Get(job_id_);
    if (absl::IsNotFound(stored.status())) return stored.status();  // Deleted meanwhile.
    if (stored.ok() && stored->finished) return SendRest(stored->finished->events);
    if (stored.ok() && RunsElsewhere(*stored, *store_) && !stored->lease.address.empty()) {
      const int64_t before = sent_;
      last = RelayFrom(stored->lease);
      if (!absl::IsUnavailable(last)) return last;
      if (sent_ > before) give_up = absl::InfiniteFuture();  // It streamed: a new wait starts.
    } else if (stored.ok()) {
      last = absl::OkStatus();
    } else {
      last = stored.status();  // The store is out of reach for now.
    }
    if (give_up == absl::InfiniteFuture()) give_up = absl::Now() + TakeoverBound(options_);
    if (absl::Now() >= give_up) return GaveUp(stored, last);
    if (WaitCancelled(options_.poll_every)) return absl::CancelledError("cancelled");
  }
}

absl::Status WatchRelay::RelayFrom(const JobLease& holder) {
  std::unique_ptr<arbor::v1::Generation::Stub> stub = PeerStub(options_.dial, holder.address);
  grpc::ClientContext context;
  MarkRelayed(context, authorization_);
  context.AddMetadata(kLastEventId, absl::StrCat(sent_));
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return absl::CancelledError("cancelled");
    upstream_ = &context;
  }
  arbor::v1::JobRef ref;
  ref.set_job_id(job_id_);
  std::unique_ptr<grpc::ClientReader<arbor::v1::GenerateEvent>> reader = stub->Watch(&context, ref);
  arbor::v1::GenerateEvent event;
  absl::Status sent = absl::OkStatus();
  while (sent.ok() && reader->Read(&event)) sent = Send(event);
  if (!sent.ok()) context.TryCancel();
  {
    absl::MutexLock lock(&mu_);
    upstream_ = nullptr;
  }
  const absl::Status relayed = rpc::FromGrpcStatus(reader->Finish());
  if (!sent.ok() || relayed.ok()) return sent;
  // A holder that goes away ends its calls UNAVAILABLE (it died) or CANCELLED (it drained):
  // either way the job goes on elsewhere.
  const absl::StatusCode code =
      absl::IsCancelled(relayed) ? absl::StatusCode::kUnavailable : relayed.code();
  return absl::Status(code, absl::StrCat("coordinator ", holder.coordinator, " at ", holder.address,
                                         ", which runs job ", job_id_, ": ", relayed.message()));
}

absl::Status WatchRelay::FollowHere(JobRecord& record) {
  const int64_t skip = sent_;
  const uint64_t subscription = record.events.Subscribe([this](const arbor::v1::GenerateEvent& e) {
    absl::MutexLock lock(&mu_);
    here_.push_back(e);
  });
  absl::Status status = absl::OkStatus();
  // A job run again here emits its events again from the first: those the client has are
  // left out.
  for (int64_t index = 0;; ++index) {
    arbor::v1::GenerateEvent event;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &WatchRelay::CancelledOrEventHere));
      if (cancelled_) {
        status = absl::CancelledError("cancelled");
        break;
      }
      event = std::move(here_.front());
      here_.pop_front();
    }
    if (index >= skip) status = Send(event);
    if (!status.ok() || event.has_finished()) break;
  }
  record.events.Unsubscribe(subscription);
  return status;
}

absl::Status WatchRelay::SendRest(const std::vector<arbor::v1::GenerateEvent>& events) {
  for (size_t i = static_cast<size_t>(sent_); i < events.size(); ++i) {
    RETURN_IF_ERROR(Send(events[i]));
  }
  return absl::OkStatus();
}

absl::Status WatchRelay::Send(const arbor::v1::GenerateEvent& event) {
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return absl::CancelledError("cancelled");
    current_ = event;
    writing_ = true;
  }
  StartWrite(&current_);
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &WatchRelay::WriteDone));
  if (!write_ok_) return absl::CancelledError("the stream was closed");
  ++sent_;
  return absl::OkStatus();
}

void WatchRelay::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  write_ok_ = ok;
}

void WatchRelay::OnCancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (upstream_ != nullptr) upstream_->TryCancel();
}

bool WatchRelay::WaitCancelled(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&cancelled_), timeout);
}

absl::Status WatchRelay::GaveUp(const absl::StatusOr<StoredJob>& stored,
                                const absl::Status& last) const {
  const std::string waited = absl::StrCat("job ", job_id_, ": no coordinator streamed it for ",
                                          absl::FormatDuration(TakeoverBound(options_)),
                                          " (twice the job lease, and time to start it again): ");
  if (!stored.ok()) {
    return absl::UnavailableError(absl::StrCat(waited, "the job store does not answer (",
                                               stored.status().message(), "); retry later"));
  }
  const JobLease& lease = stored->lease;
  if (store_->Holds(job_id_)) {
    return absl::UnavailableError(
        absl::StrCat(waited,
                     "this coordinator took it over and has not started it again yet (it starts "
                     "once a worker is ready); retry shortly"));
  }
  if (RunsElsewhere(*stored, *store_) && lease.address.empty()) {
    return absl::UnavailableError(
        absl::StrCat(waited, "coordinator ", lease.coordinator,
                     " holds it and recorded no address to reach it at: start it with "
                     "--advertise, or ask it directly"));
  }
  if (RunsElsewhere(*stored, *store_)) {
    return absl::UnavailableError(absl::StrCat(waited, last.message(), "; is coordinator ",
                                               lease.coordinator, "'s --advertise (", lease.address,
                                               ") an address the other coordinators reach?"));
  }
  return absl::UnavailableError(absl::StrCat(
      waited, "coordinator ", lease.coordinator.empty() ? "(none)" : lease.coordinator,
      " stopped renewing its lease and no coordinator on the job store has taken it over; "
      "are the others up? Retry later"));
}

}  // namespace arbor::coordinator
