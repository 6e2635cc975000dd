// The job store's background work in a running coordinator: it renews the leases of the jobs
// this coordinator holds (one store statement for all of them), stops the jobs it lost to
// another coordinator and cancels those a Cancel reached elsewhere; it takes over the jobs whose
// holder's lease lapsed (a dead or cut-off coordinator) and runs them again
// (JobLauncher::Resume) as soon as a worker is ready, like those an earlier process under this
// coordinator's id left; and now and then it deletes the finished jobs beyond the retention
// bounds. One thread, which the destructor stops.
#ifndef ARBOR_COORDINATOR_SERVICE_STORE_UPKEEP_H_
#define ARBOR_COORDINATOR_SERVICE_STORE_UPKEEP_H_

#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "coordinator/service/job_launcher.h"
#include "coordinator/service/job_registry.h"
#include "coordinator/store/job_store.h"

namespace arbor::coordinator {

struct StoreUpkeepOptions {
  JobRetention retention;
  absl::Duration prune_every = absl::Minutes(1);
  // How often the leases are renewed and lapsed ones looked for: well within the lease, so that
  // a renewal or two may fail (the store briefly unreachable) before the lease lapses.
  absl::Duration renew_every = absl::Seconds(3);
  // How long a job that cannot start yet (no worker ready, admission full) waits to try again.
  absl::Duration retry_every = absl::Milliseconds(250);
};

class StoreUpkeep {
 public:
  // Runs `claimed` (what this coordinator took over before it accepted any job) again, oldest
  // first, keeps the leases, takes over lapsed jobs, and prunes the store. Every pointer must
  // outlive this object.
  StoreUpkeep(StoreUpkeepOptions options, JobStore* store, JobLauncher* launcher,
              JobRegistry* registry, base::Clock* clock, std::vector<StoredJob> claimed);
  ~StoreUpkeep();
  StoreUpkeep(const StoreUpkeep&) = delete;
  StoreUpkeep& operator=(const StoreUpkeep&) = delete;

  // Whether the store answers: OK until a lease renewal fails, then UNAVAILABLE with the
  // failure until one succeeds again. A coordinator whose renewals fail loses its jobs to the
  // others once the leases lapse, so its readiness (GET /health) follows this.
  absl::Status Health() const;

 private:
  void Run();
  // Renews the leases and acts on what the renewal found.
  void Renew();
  // Stops `job_id`, which another coordinator took over: it fails here, naming that one.
  void Abandon(const std::string& job_id);
  // Claims the jobs whose lease lapsed, to resume after those waiting already.
  void TakeOverLapsed();
  // Resumes the waiting jobs in order until one cannot start yet; false when one is left.
  bool ResumeWaiting();
  void Prune();

  const StoreUpkeepOptions options_;
  JobStore* const store_;
  JobLauncher* const launcher_;
  JobRegistry* const registry_;
  base::Clock* const clock_;
  std::vector<StoredJob> waiting_;  // Newest first: the next to resume is at the back.

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status last_renewal_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_STORE_UPKEEP_H_
