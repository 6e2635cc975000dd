// The JobStore over any SqlDatabase: one table, arbor_jobs, one row per job (job_schema.h). A
// row is written whole when the job is accepted (its request, and the lease of the coordinator
// that accepted it) and updated once when it ends (its Job, events and tree); while it runs only
// the lease moves, by one statement per coordinator and renewal period for all of its jobs.
// Takeover is one conditional UPDATE that returns the rows it claimed, so that of coordinators
// racing for a lapsed job exactly one wins; every write of a job names the epoch it was held
// at, so a holder that was replaced cannot write. The store remembers which jobs it holds, at
// which epoch. The SQL is the subset SQLite and PostgreSQL share; only the byte column's type
// differs.
#ifndef ARBOR_COORDINATOR_STORE_SQL_JOB_STORE_H_
#define ARBOR_COORDINATOR_STORE_SQL_JOB_STORE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/store/job_store.h"
#include "coordinator/store/sql_database.h"

namespace arbor::coordinator {

class SqlJobStore final : public JobStore {
 public:
  // Creates the table and its indexes where missing, or brings an older one up to date.
  // INVALID_ARGUMENT without a coordinator id or with a lease that is not positive.
  static absl::StatusOr<std::unique_ptr<SqlJobStore>> Open(std::unique_ptr<SqlDatabase> db,
                                                           LeaseOptions lease);

  absl::Status Accept(const AcceptedJob& job) override;
  absl::Status Forget(const std::string& job_id) override;
  absl::Status Finish(const std::string& job_id, const FinishedJob& finished) override;
  absl::StatusOr<StoredJob> Get(const std::string& job_id) override;
  absl::StatusOr<std::vector<StoredJob>> List(const JobFilter& filter, bool brief) override;
  absl::StatusOr<int64_t> Prune(const JobRetention& retention, absl::Time now) override;
  absl::StatusOr<std::vector<StoredJob>> TakeOver(Claim which) override;
  absl::StatusOr<LeaseRenewal> Renew() override;
  absl::StatusOr<StoredJob> RequestCancel(const std::string& job_id) override;
  absl::Status Advertise(const std::string& address) override;
  bool Holds(const std::string& job_id) override;
  absl::Status Release() override;

 private:
  SqlJobStore(std::unique_ptr<SqlDatabase> db, LeaseOptions lease)
      : lease_(std::move(lease)), db_(std::move(db)) {}
  // The end of a lease taken or renewed now, in the store's milliseconds.
  int64_t LeaseEndMs() const;
  // What Advertise recorded last.
  std::string Address() const;
  // Why `job_id`, which this coordinator held at `epoch` (0: did not hold), cannot be written:
  // NOT_FOUND when no row has it, else ABORTED naming its holder.
  absl::Status NotHeld(const std::string& job_id, int64_t epoch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Lets go of jobs held under this coordinator's id that this process does not hold (left by
  // a process before it, or whose end it failed to record), so that another coordinator runs
  // them again.
  absl::Status ReleaseStrays(const std::vector<std::pair<std::string, int64_t>>& strays)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rows of `sql` (selecting kColumns, or kBriefColumns) as jobs.
  absl::StatusOr<std::vector<StoredJob>> Select(const std::string& sql,
                                                absl::Span<const SqlValue> params)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<StoredJob> GetLocked(const std::string& job_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes `job_ids` in one transaction.
  absl::Status Delete(const std::vector<std::string>& job_ids) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const LeaseOptions lease_;
  // Its own lock: Advertise comes from the server's start, not from a store call.
  mutable absl::Mutex address_mu_;
  std::string address_ ABSL_GUARDED_BY(address_mu_);
  absl::Mutex mu_;
  const std::unique_ptr<SqlDatabase> db_ ABSL_GUARDED_BY(mu_);
  // The jobs this process holds, with the epoch it holds each at: what its writes are fenced by.
  absl::flat_hash_map<std::string, int64_t> held_ ABSL_GUARDED_BY(mu_);
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_STORE_SQL_JOB_STORE_H_
