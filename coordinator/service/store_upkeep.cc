#include "coordinator/service/store_upkeep.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/log_fields.h"
#include "spdlog/spdlog.h"

namespace arbor::coordinator {

StoreUpkeep::StoreUpkeep(StoreUpkeepOptions options, JobStore* store, JobLauncher* launcher,
                         JobRegistry* registry, base::Clock* clock, std::vector<StoredJob> claimed)
    : options_(std::move(options)),
      store_(store),
      launcher_(launcher),
      registry_(registry),
      clock_(clock),
      waiting_(std::move(claimed)) {
  std::reverse(waiting_.begin(), waiting_.end());
  if (!waiting_.empty()) {
    base::WithFields({{"event", "resuming"}, {"jobs", waiting_.size()}})
        .Info("resuming the jobs the previous coordinator left unfinished");
  }
  thread_ = std::thread([this] { Run(); });
}

StoreUpkeep::~StoreUpkeep() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void StoreUpkeep::Run() {
  absl::Time next_prune = clock_->Now();
  absl::Time next_renewal = clock_->Now() + options_.renew_every;
  while (true) {
    if (clock_->Now() >= next_renewal) {
      Renew();
      TakeOverLapsed();
      next_renewal = clock_->Now() + options_.renew_every;
    }
    const bool all_resumed = ResumeWaiting();
    if (clock_->Now() >= next_prune) {
      Prune();
      next_prune = clock_->Now() + options_.prune_every;
    }
    const absl::Duration wait =
        all_resumed ? std::min(next_prune, next_renewal) - clock_->Now() : options_.retry_every;
    absl::MutexLock lock(&mu_);
    auto stopping = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping), std::max(wait, absl::ZeroDuration()))) {
      return;
    }
  }
}

absl::Status StoreUpkeep::Health() const {
  absl::MutexLock lock(&mu_);
  return last_renewal_;
}

void StoreUpkeep::Renew() {
  const absl::StatusOr<LeaseRenewal> renewal = store_->Renew();
  {
    absl::MutexLock lock(&mu_);
    last_renewal_ = renewal.ok() ? absl::OkStatus()
                                 : absl::UnavailableError(absl::StrCat(
                                       "the job store does not answer (leases not renewed): ",
                                       renewal.status().message()));
  }
  if (!renewal.ok()) {
    // The next renewal tries again; past the lease another coordinator takes the jobs over, and
    // this one learns it at the first renewal that gets through.
    spdlog::warn("job store: leases not renewed: {}", renewal.status().ToString());
    return;
  }
  for (const std::string& job_id : renewal->lost) Abandon(job_id);
  for (const std::string& job_id : renewal->cancel_requested) {
    // One not started yet is cancelled at the first renewal after it starts.
    base::WithFields({{"job_id", job_id}, {"event", "cancel_requested"}})
        .Info("a Cancel of the job reached another coordinator: cancelled here");
    if (absl::StatusOr<std::shared_ptr<JobRecord>> record = registry_->Find(job_id); record.ok()) {
      (*record)->job->Cancel();
    }
  }
}

void StoreUpkeep::Abandon(const std::string& job_id) {
  const absl::StatusOr<StoredJob> stored = store_->Get(job_id);
  const std::string holder = stored.ok() ? stored->lease.coordinator : "(unknown)";
  const absl::Status why = absl::AbortedError(absl::StrCat(
      "this coordinator's lease on the job lapsed and coordinator ", holder,
      " took it over, where it runs again from the start: watch it there, or here once it has "
      "ended"));
  base::WithFields({{"job_id", job_id}, {"event", "job_lost"}, {"holder", holder}})
      .Warn("job stopped here: {}", std::string(why.message()));
  // Not this coordinator's to start any more, if it has not started yet.
  std::erase_if(waiting_, [&](const StoredJob& job) { return job.accepted.job_id == job_id; });
  if (absl::StatusOr<std::shared_ptr<JobRecord>> record = registry_->Find(job_id); record.ok()) {
    (*record)->job->Abandon(why);
  }
}

void StoreUpkeep::TakeOverLapsed() {
  absl::StatusOr<std::vector<StoredJob>> claimed = store_->TakeOver(Claim::kLapsed);
  if (!claimed.ok()) {
    spdlog::warn("job store: lapsed leases not looked for: {}", claimed.status().ToString());
    return;
  }
  if (claimed->empty()) return;
  for (const StoredJob& job : *claimed) {
    base::WithFields(
        {{"job_id", job.accepted.job_id}, {"event", "taken_over"}, {"epoch", job.lease.epoch}})
        .Info("job taken over: its coordinator's lease lapsed");
  }
  // Oldest first, after those waiting already (the back of waiting_ goes first).
  waiting_.insert(waiting_.begin(), claimed->rbegin(), claimed->rend());
}

bool StoreUpkeep::ResumeWaiting() {
  while (!waiting_.empty()) {
    const StoredJob& next = waiting_.back();
    absl::StatusOr<std::shared_ptr<JobRecord>> resumed = launcher_->Resume(next);
    if (absl::IsUnavailable(resumed.status()) || absl::IsResourceExhausted(resumed.status())) {
      return false;  // No worker yet, or no room: the same job tries again shortly.
    }
    base::LogFields fields = {{"job_id", next.accepted.job_id}, {"event", "resumed"}};
    if (resumed.ok()) {
      base::WithFields(std::move(fields)).Info("job resumed from the job store");
    } else {
      base::WithFields(std::move(fields)).Warn("job not resumed: {}", resumed.status().ToString());
    }
    waiting_.pop_back();
  }
  return true;
}

void StoreUpkeep::Prune() {
  const absl::StatusOr<int64_t> pruned = store_->Prune(options_.retention, clock_->Now());
  if (!pruned.ok()) {
    spdlog::warn("job store: retention not applied: {}", pruned.status().ToString());
  } else if (*pruned > 0) {
    base::WithFields({{"event", "store_pruned"}, {"jobs", *pruned}})
        .Info("job store: finished jobs past retention deleted");
  }
}

}  // namespace arbor::coordinator
