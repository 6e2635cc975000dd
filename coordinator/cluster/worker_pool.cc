#include "coordinator/cluster/worker_pool.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/log_fields.h"
#include "base/status_macros.h"
#include "coordinator/cluster/worker_names.h"
#include "rpc/grpc_status.h"
#include "spdlog/spdlog.h"

namespace arbor::coordinator {

using arbor::v1::WorkerState;

struct WorkerPool::Entry {
  std::string worker_id;
  std::string address;
  std::shared_ptr<arbor::v1::Worker::StubInterface> stub;
  WorkerState state = arbor::v1::WORKER_STATE_DEAD;
  bool has_info = false;
  arbor::v1::WorkerInfo info;
  bool registered = false;   // Sends heartbeats; otherwise the monitor polls it.
  bool draining = false;     // Sticky: an admin asked; survives re-registration.
  uint64_t instance_id = 0;  // Of the registered process (WorkerInfo.instance_id).
  uint64_t incarnation = 0;  // Pool-wide unique per life (see the header).
  std::string refused;       // Why a worker that answers is not used (another model).
  arbor::v1::HealthResponse load;
  absl::Time report_time = absl::InfinitePast();
  absl::Time last_heartbeat = absl::InfinitePast();
  int jobs = 0;
  int jobs_since_report = 0;
  int failed_polls = 0;
  absl::Time next_poll = absl::InfinitePast();
};

struct WorkerPool::PollResult {
  std::string address;
  absl::Status status;  // OK when Health (and Info, when asked) answered.
  std::optional<arbor::v1::WorkerInfo> info;
  arbor::v1::HealthResponse load;
};

namespace {

absl::Status UnknownWorker(const std::string& worker_id) {
  return absl::NotFoundError(absl::StrCat("worker_id: no worker '", worker_id, "'"));
}

}  // namespace

WorkerPool::StubFactory WorkerPool::InsecureStubs() {
  return [](const std::string& address) -> std::shared_ptr<arbor::v1::Worker::StubInterface> {
    return arbor::v1::Worker::NewStub(
        grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  };
}

WorkerPool::WorkerPool(WorkerPoolOptions options, base::Clock* clock, StubFactory stubs)
    : options_(std::move(options)),
      clock_(clock),
      stubs_(std::move(stubs)),
      affinity_(options_.routing.affinity_capacity) {}

WorkerPool::~WorkerPool() {
  stop_.Notify();
  if (monitor_.joinable()) monitor_.join();
}

WorkerPool::Entry* WorkerPool::FindById(const std::string& worker_id) {
  for (auto& e : entries_) {
    if (e->worker_id == worker_id) return e.get();
  }
  return nullptr;
}

const WorkerPool::Entry* WorkerPool::FindById(const std::string& worker_id) const {
  for (const auto& e : entries_) {
    if (e->worker_id == worker_id) return e.get();
  }
  return nullptr;
}

absl::Status WorkerPool::AddStatic(const std::string& address) {
  RETURN_IF_ERROR(CheckWorkerAddress(address, "address"));
  absl::MutexLock lock(&mu_);
  for (const auto& e : entries_) {
    if (e->address == address) return absl::OkStatus();
  }
  auto entry = std::make_unique<Entry>();
  entry->worker_id = address;
  entry->address = address;
  entry->stub = stubs_(address);
  entry->incarnation = ++incarnations_;
  entries_.push_back(std::move(entry));
  return absl::OkStatus();
}

absl::StatusOr<std::string> WorkerPool::Register(const std::string& address,
                                                 const arbor::v1::WorkerInfo& info) {
  RETURN_IF_ERROR(CheckWorkerAddress(address, "address"));
  if (absl::Status model = CheckWorkerModel(options_.model, address, info.model()); !model.ok()) {
    RefuseRegistration(address, model);
    return model;
  }
  const std::string id = info.worker_id().empty() ? address : info.worker_id();
  const absl::Time now = clock_->Now();
  std::vector<WorkerEvent> events;
  {
    absl::MutexLock lock(&mu_);
    Entry* by_address = nullptr;
    for (auto& e : entries_) {
      if (e->address == address) by_address = e.get();
    }
    Entry* by_id = FindById(id);
    if (by_id != nullptr && by_id != by_address) {
      if (by_id->state != arbor::v1::WORKER_STATE_DEAD) {
        return absl::AlreadyExistsError(
            absl::StrCat("info.worker_id: '", id, "' is already live at ", by_id->address));
      }
      // The same worker came back on another address: the old entry is history.
      entries_.erase(std::find_if(entries_.begin(), entries_.end(),
                                  [&](const auto& e) { return e.get() == by_id; }));
    }
    if (by_address == nullptr) {
      entries_.push_back(std::make_unique<Entry>());
      by_address = entries_.back().get();
      by_address->address = address;
    } else if (by_address->worker_id != id) {
      // Another process now answers at this address: the old one is gone with its jobs.
      SetDead(*by_address, "replaced by worker " + id, events);
    } else if (by_address->instance_id != info.instance_id()) {
      // The same worker restarted before we noticed: its sequences are gone.
      SetDead(*by_address, "restarted (new instance)", events);
    }
    Entry& e = *by_address;
    if (e.state == arbor::v1::WORKER_STATE_DEAD || e.stub == nullptr) {
      // A new life: a fresh channel (the old one may be in reconnect backoff), no stale drain.
      e.draining = false;
      e.stub = stubs_(address);
      e.incarnation = ++incarnations_;
    }
    e.instance_id = info.instance_id();
    e.refused.clear();
    e.worker_id = id;
    e.info = info;
    e.has_info = true;
    e.registered = true;
    e.last_heartbeat = now;
    e.state = e.draining ? arbor::v1::WORKER_STATE_DRAINING : arbor::v1::WORKER_STATE_READY;
  }
  Notify(events);
  base::WithFields({{"worker", id}, {"address", address}, {"event", "worker_registered"}})
      .Info("worker registered");
  return id;
}

WorkerPool::HeartbeatReply WorkerPool::Heartbeat(const std::string& worker_id,
                                                 const arbor::v1::HealthResponse& load) {
  std::vector<WorkerEvent> events;
  HeartbeatReply reply;
  {
    absl::MutexLock lock(&mu_);
    Entry* e = FindById(worker_id);
    if (e == nullptr || e->state == arbor::v1::WORKER_STATE_DEAD || !e->registered) return {};
    e->last_heartbeat = clock_->Now();
    ApplyLoad(*e, load, e->last_heartbeat);
    FollowServing(*e, load.serving(), events);
    reply = {true, e->draining};
  }
  Notify(events);
  return reply;
}

void WorkerPool::FollowServing(Entry& e, bool serving, std::vector<WorkerEvent>& events) {
  if (e.state == arbor::v1::WORKER_STATE_READY && !serving) {
    base::WithFields({{"worker", e.worker_id}, {"event", "worker_not_serving"}})
        .Warn("worker reports it is not serving; no jobs go there until it does");
    e.state = arbor::v1::WORKER_STATE_DRAINING;
    events.push_back({e.worker_id, WorkerEvent::kDraining, "the worker reports it is not serving"});
  } else if (e.state == arbor::v1::WORKER_STATE_DRAINING && !e.draining && serving) {
    e.state = arbor::v1::WORKER_STATE_READY;  // Undrained, or recovered, and serving again.
  }
}

void WorkerPool::ApplyLoad(Entry& e, const arbor::v1::HealthResponse& load, absl::Time now) {
  e.load = load;
  e.report_time = now;
  e.jobs_since_report = 0;  // The report now counts them among its live sequences.
}

absl::StatusOr<int> WorkerPool::Drain(const std::string& worker_id) {
  return StartDraining(worker_id, std::nullopt, "drain requested");
}

absl::StatusOr<int> WorkerPool::StartDraining(const std::string& worker_id,
                                              std::optional<uint64_t> instance_id,
                                              const std::string& reason) {
  std::vector<WorkerEvent> events;
  int jobs = 0;
  {
    absl::MutexLock lock(&mu_);
    Entry* e = FindById(worker_id);
    if (e == nullptr) {
      return UnknownWorker(worker_id);
    }
    if (instance_id && e->instance_id != *instance_id) {
      return absl::FailedPreconditionError(absl::StrCat(
          "instance_id: ", *instance_id, " is not the instance registered as '", worker_id, "'"));
    }
    jobs = e->jobs;
    SetDraining(*e, reason, events);
  }
  Notify(events);
  return jobs;
}

absl::Status WorkerPool::Undrain(const std::string& worker_id) {
  {
    absl::MutexLock lock(&mu_);
    Entry* e = FindById(worker_id);
    if (e == nullptr) {
      return UnknownWorker(worker_id);
    }
    e->draining = false;
    // A registered worker stopped serving when its heartbeat told it to drain; it is READY
    // again once a heartbeat says it serves (Heartbeat), so no job is routed to it before. A
    // static worker never heard of the drain.
    if (e->state == arbor::v1::WORKER_STATE_DRAINING && !e->registered) {
      e->state = arbor::v1::WORKER_STATE_READY;
    }
  }
  base::WithFields({{"worker", worker_id}, {"event", "worker_undrained"}}).Info("worker undrained");
  return absl::OkStatus();
}

absl::StatusOr<int> WorkerPool::Deregister(const std::string& worker_id, uint64_t instance_id) {
  ASSIGN_OR_RETURN(const int jobs, StartDraining(worker_id, instance_id, "worker is stopping"));
  base::WithFields({{"worker", worker_id}, {"event", "worker_deregistered"}, {"jobs", jobs}})
      .Info("worker deregistered");
  return jobs;
}

void WorkerPool::SetDraining(Entry& e, const std::string& reason,
                             std::vector<WorkerEvent>& events) {
  if (e.draining) return;
  e.draining = true;
  if (e.state == arbor::v1::WORKER_STATE_READY) {
    e.state = arbor::v1::WORKER_STATE_DRAINING;
    events.push_back({e.worker_id, WorkerEvent::kDraining, reason});
  }
}

void WorkerPool::SetDead(Entry& e, const std::string& reason, std::vector<WorkerEvent>& events) {
  if (e.state == arbor::v1::WORKER_STATE_DEAD) return;
  base::WithFields({{"worker", e.worker_id}, {"address", e.address}, {"event", "worker_dead"}})
      .Warn("worker is dead: {}", reason);
  e.state = arbor::v1::WORKER_STATE_DEAD;
  affinity_.ForgetWorker(e.worker_id);  // Whatever it comes back with, its cache is gone.
  events.push_back({e.worker_id, WorkerEvent::kDied, reason});
}

void WorkerPool::Refuse(Entry& e, const absl::Status& why, std::vector<WorkerEvent>& events) {
  const std::string reason(why.message());
  if (reason != e.refused) {
    base::WithFields({{"worker", e.worker_id}, {"address", e.address}, {"event", "worker_refused"}})
        .Warn("worker refused: {}", reason);
  }
  e.refused = reason;
  SetDead(e, reason, events);
}

void WorkerPool::RefuseRegistration(const std::string& address, const absl::Status& why) {
  std::vector<WorkerEvent> events;
  {
    absl::MutexLock lock(&mu_);
    bool known = false;
    for (auto& e : entries_) {
      if (e->address != address) continue;
      known = true;
      Refuse(*e, why, events);  // Logs it.
    }
    if (!known) {
      base::WithFields({{"address", address}, {"event", "worker_refused"}})
          .Warn("worker refused: {}", std::string(why.message()));
    }
  }
  Notify(events);
}

void WorkerPool::MarkDead(const std::string& worker_id, uint64_t incarnation,
                          const std::string& reason) {
  std::vector<WorkerEvent> events;
  {
    absl::MutexLock lock(&mu_);
    Entry* e = FindById(worker_id);
    // A draining worker refuses new runs with UNAVAILABLE by design while it finishes the ones
    // it has: its heartbeats or health polls, not a refused run, say whether it died.
    if (e == nullptr || e->incarnation != incarnation || e->draining) return;
    SetDead(*e, reason, events);
    e->next_poll = clock_->Now();  // A static worker is dialled again right away.
  }
  Notify(events);
}

bool WorkerPool::IsCurrent(const std::string& worker_id, uint64_t incarnation) const {
  absl::MutexLock lock(&mu_);
  const Entry* e = FindById(worker_id);
  return e != nullptr && e->incarnation == incarnation;
}

int WorkerPool::AffinityBlockSize() const {
  for (const auto& e : entries_) {
    if (e->has_info && e->info.block_size() > 0) return e->info.block_size();
  }
  return 16;  // docs/ARCHITECTURE.md §5 default; only the granularity of the affinity hash depends
              // on it.
}

absl::StatusOr<RoutingDecision> WorkerPool::RouteJob(
    absl::Span<const int32_t> prompt_tokens, const absl::flat_hash_set<std::string>& exclude) {
  absl::MutexLock lock(&mu_);
  std::vector<RoutingCandidate> candidates;
  candidates.reserve(entries_.size());
  for (const auto& e : entries_) {
    const arbor::v1::CacheStats& cache = e->load.cache();
    candidates.push_back({e->worker_id, e->state == arbor::v1::WORKER_STATE_READY,
                          e->load.live_sequences(), e->load.queued_tokens(), e->jobs_since_report,
                          cache.total_blocks(), cache.used_blocks(),
                          cache.used_blocks() + cache.cached_blocks(), e->report_time});
  }
  const std::vector<uint64_t> prefix =
      PrefixBlockHashes(prompt_tokens, AffinityBlockSize(), options_.routing.max_prefix_blocks);
  ASSIGN_OR_RETURN(RoutingDecision decision,
                   ChooseWorker(candidates, prefix, exclude, affinity_, options_.routing));
  Entry* chosen = FindById(decision.worker_id);
  ++chosen->jobs;
  ++chosen->jobs_since_report;
  affinity_.Record(prefix, decision.worker_id, clock_->Now());
  return decision;
}

void WorkerPool::JobLeft(const std::string& worker_id) {
  absl::MutexLock lock(&mu_);
  if (Entry* e = FindById(worker_id); e != nullptr && e->jobs > 0) --e->jobs;
}

absl::StatusOr<WorkerHandle> WorkerPool::Get(const std::string& worker_id) const {
  absl::MutexLock lock(&mu_);
  const Entry* e = FindById(worker_id);
  if (e == nullptr) {
    return absl::NotFoundError(absl::StrCat("worker_id: no worker '", worker_id, "'"));
  }
  return WorkerHandle{e->worker_id, e->address, e->stub, e->info, e->incarnation, options_.epoch};
}

absl::StatusOr<arbor::v1::ModelInfo> WorkerPool::Model() const {
  absl::MutexLock lock(&mu_);
  for (const auto& e : entries_) {
    if (e->state == arbor::v1::WORKER_STATE_READY && e->has_info) return e->info.model();
  }
  return absl::UnavailableError(
      absl::StrCat("no worker is ready (", entries_.size(), " known); retry later"));
}

std::vector<arbor::v1::WorkerStatus> WorkerPool::List() const {
  std::vector<arbor::v1::WorkerStatus> out;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& e : entries_) {
      arbor::v1::WorkerStatus& s = out.emplace_back();
      s.set_worker_id(e->worker_id);
      s.set_address(e->address);
      s.set_state(e->state);
      *s.mutable_info() = e->info;
      *s.mutable_load() = e->load;
      s.set_jobs(e->jobs);
      s.set_refused(e->refused);
      if (e->last_heartbeat != absl::InfinitePast()) {
        s.set_last_heartbeat_unix_ms(absl::ToUnixMillis(e->last_heartbeat));
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.worker_id() < b.worker_id(); });
  return out;
}

int WorkerPool::ready_count() const {
  absl::MutexLock lock(&mu_);
  return std::count_if(entries_.begin(), entries_.end(),
                       [](const auto& e) { return e->state == arbor::v1::WORKER_STATE_READY; });
}

void WorkerPool::AddListener(Listener listener) {
  absl::MutexLock lock(&mu_);
  listeners_.push_back(std::move(listener));
}

void WorkerPool::Notify(const std::vector<WorkerEvent>& events) {
  if (events.empty()) return;
  std::vector<Listener> listeners;
  {
    absl::MutexLock lock(&mu_);
    listeners = listeners_;
  }
  for (const WorkerEvent& event : events) {
    for (const Listener& listener : listeners) listener(event);
  }
}

WorkerPool::PollResult WorkerPool::Poll(
    const std::string& address, const std::shared_ptr<arbor::v1::Worker::StubInterface>& stub,
    bool need_info) const {
  PollResult result;
  result.address = address;
  const auto deadline =
      std::chrono::system_clock::now() + absl::ToChronoMilliseconds(options_.rpc_timeout);
  if (need_info) {
    grpc::ClientContext context;
    context.set_deadline(deadline);
    arbor::v1::WorkerInfo info;
    result.status = rpc::FromGrpcStatus(stub->Info(&context, {}, &info));
    if (!result.status.ok()) return result;
    result.info = std::move(info);
  }
  grpc::ClientContext context;
  context.set_deadline(deadline);
  arbor::v1::HealthRequest request;
  request.set_owner_epoch(options_.epoch);  // Keeps our sequences' lease on the worker alive.
  result.status = rpc::FromGrpcStatus(stub->Health(&context, request, &result.load));
  return result;
}

void WorkerPool::Apply(const PollResult& r, absl::Time now, std::vector<WorkerEvent>& events) {
  Entry* e = nullptr;
  for (auto& entry : entries_) {
    if (entry->address == r.address) e = entry.get();
  }
  if (e == nullptr || e->registered) return;  // Removed or registered meanwhile.
  if (!r.status.ok()) {
    ++e->failed_polls;
    if (now - e->last_heartbeat > options_.heartbeat_timeout) {
      SetDead(*e,
              absl::StrCat("no answer for ", absl::FormatDuration(now - e->last_heartbeat), ": ",
                           r.status.ToString()),
              events);
    }
    absl::Duration backoff = options_.backoff_initial;
    for (int i = 1; i < e->failed_polls && backoff < options_.backoff_max; ++i) backoff *= 2;
    e->next_poll =
        now + (e->state == arbor::v1::WORKER_STATE_DEAD ? std::min(backoff, options_.backoff_max)
                                                        : options_.poll_interval);
    return;
  }
  if (r.info.has_value()) {
    if (absl::Status model = CheckWorkerModel(options_.model, e->address, r.info->model());
        !model.ok()) {
      Refuse(*e, model, events);
      e->next_poll = now + options_.backoff_max;
      return;
    }
    e->refused.clear();
    e->info = *r.info;
    e->has_info = true;
    const std::string id = r.info->worker_id().empty() ? e->address : r.info->worker_id();
    const Entry* other = FindById(id);
    if (other == nullptr || other == e) {
      e->worker_id = id;
    } else {
      spdlog::warn("worker at {} reports id {} already used by {}; keeping id {}", e->address, id,
                   other->address, e->worker_id);
    }
  }
  if (e->state == arbor::v1::WORKER_STATE_DEAD) {
    base::WithFields({{"worker", e->worker_id}, {"address", e->address}, {"event", "worker_up"}})
        .Info("worker is up");
    e->draining = false;
    e->state = arbor::v1::WORKER_STATE_READY;
    e->incarnation = ++incarnations_;
  }
  e->failed_polls = 0;
  e->last_heartbeat = now;
  ApplyLoad(*e, r.load, now);
  FollowServing(*e, r.load.serving(), events);
  e->next_poll = now + options_.poll_interval;
}

void WorkerPool::Tick() {
  absl::MutexLock tick_lock(&tick_mu_);
  struct Due {
    std::string address;
    std::shared_ptr<arbor::v1::Worker::StubInterface> stub;
    bool need_info;
  };
  std::vector<Due> due;
  std::vector<WorkerEvent> events;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    for (auto& e : entries_) {
      if (e->registered) {
        if (now - e->last_heartbeat > options_.heartbeat_timeout) {
          SetDead(*e,
                  absl::StrCat("no heartbeat for ", absl::FormatDuration(now - e->last_heartbeat)),
                  events);
          // It must register again to come back: its heartbeats now answer known = false.
        }
      } else if (now >= e->next_poll) {
        // A worker that is (re)connecting is asked Info again: it may have restarted.
        due.push_back({e->address, e->stub, e->state == arbor::v1::WORKER_STATE_DEAD});
      }
    }
  }
  std::vector<PollResult> results;
  for (const Due& d : due) results.push_back(Poll(d.address, d.stub, d.need_info));
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    for (const PollResult& r : results) Apply(r, now, events);
  }
  Notify(events);
}

void WorkerPool::StartMonitor() {
  if (monitor_.joinable()) return;
  monitor_ = std::thread([this] {
    do {
      Tick();
    } while (!stop_.WaitForNotificationWithTimeout(options_.monitor_tick));
  });
}

}  // namespace arbor::coordinator
