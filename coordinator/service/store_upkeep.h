// The job store's background work in a running coordinator: the jobs an earlier process
// accepted and never finished are run again (JobLauncher::Resume) as soon as a worker is ready,
// and the finished jobs beyond the retention bounds are deleted now and then. One thread, which
// the destructor stops.
#ifndef ARBOR_COORDINATOR_SERVICE_STORE_UPKEEP_H_
#define ARBOR_COORDINATOR_SERVICE_STORE_UPKEEP_H_

#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "coordinator/service/job_launcher.h"
#include "coordinator/store/job_store.h"

namespace arbor::coordinator {

struct StoreUpkeepOptions {
  JobRetention retention;
  absl::Duration prune_every = absl::Minutes(1);
  // How long a job that cannot start yet (no worker ready, admission full) waits to try again.
  absl::Duration retry_every = absl::Milliseconds(250);
};

class StoreUpkeep {
 public:
  // Runs `unfinished` (what the store held unfinished before this process accepted any job)
  // again, oldest first, and prunes the store. Every pointer must outlive this object.
  StoreUpkeep(StoreUpkeepOptions options, JobStore* store, JobLauncher* launcher,
              base::Clock* clock, std::vector<StoredJob> unfinished);
  ~StoreUpkeep();
  StoreUpkeep(const StoreUpkeep&) = delete;
  StoreUpkeep& operator=(const StoreUpkeep&) = delete;

 private:
  void Run();
  // Resumes the waiting jobs in order until one cannot start yet; false when one is left.
  bool ResumeWaiting();
  void Prune();

  const StoreUpkeepOptions options_;
  JobStore* const store_;
  JobLauncher* const launcher_;
  base::Clock* const clock_;
  std::vector<StoredJob> waiting_;  // Newest first: the next to resume is at the back.

  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_STORE_UPKEEP_H_
