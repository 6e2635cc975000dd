#include "coordinator/service/store_upkeep.h"

#include <algorithm>
#include <utility>

#include "base/log_fields.h"
#include "spdlog/spdlog.h"

namespace arbor::coordinator {

StoreUpkeep::StoreUpkeep(StoreUpkeepOptions options, JobStore* store, JobLauncher* launcher,
                         base::Clock* clock, std::vector<StoredJob> unfinished)
    : options_(std::move(options)),
      store_(store),
      launcher_(launcher),
      clock_(clock),
      waiting_(std::move(unfinished)) {
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
  while (true) {
    const bool all_resumed = ResumeWaiting();
    if (clock_->Now() >= next_prune) {
      Prune();
      next_prune = clock_->Now() + options_.prune_every;
    }
    const absl::Duration wait = all_resumed ? next_prune - clock_->Now() : options_.retry_every;
    absl::MutexLock lock(&mu_);
    auto stopping = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping), std::max(wait, absl::ZeroDuration()))) {
      return;
    }
  }
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
