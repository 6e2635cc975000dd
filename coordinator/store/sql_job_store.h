// The JobStore over any SqlDatabase: one table, arbor_jobs, one row per job. A row is written
// whole when the job is accepted (its request) and updated once when it ends (its Job, events
// and tree); nothing is written while it runs, so the store costs two statements per job. The
// SQL is the subset SQLite and PostgreSQL share; only the byte column's type differs.
#ifndef ARBOR_COORDINATOR_STORE_SQL_JOB_STORE_H_
#define ARBOR_COORDINATOR_STORE_SQL_JOB_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/store/job_store.h"
#include "coordinator/store/sql_database.h"

namespace arbor::coordinator {

class SqlJobStore final : public JobStore {
 public:
  // Creates the table and its indexes where missing.
  static absl::StatusOr<std::unique_ptr<SqlJobStore>> Open(std::unique_ptr<SqlDatabase> db);

  absl::Status Accept(const AcceptedJob& job) override;
  absl::Status Forget(const std::string& job_id) override;
  absl::Status Finish(const std::string& job_id, const FinishedJob& finished) override;
  absl::StatusOr<StoredJob> Get(const std::string& job_id) override;
  absl::StatusOr<std::vector<StoredJob>> List(const JobFilter& filter, bool brief) override;
  absl::StatusOr<std::vector<StoredJob>> Unfinished() override;
  absl::StatusOr<int64_t> Prune(const JobRetention& retention, absl::Time now) override;

 private:
  explicit SqlJobStore(std::unique_ptr<SqlDatabase> db) : db_(std::move(db)) {}
  // Rows of `sql` (selecting kColumns, or kBriefColumns) as jobs.
  absl::StatusOr<std::vector<StoredJob>> Select(const std::string& sql,
                                                absl::Span<const SqlValue> params)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes `job_ids` in one transaction.
  absl::Status Delete(const std::vector<std::string>& job_ids) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  const std::unique_ptr<SqlDatabase> db_ ABSL_GUARDED_BY(mu_);
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_STORE_SQL_JOB_STORE_H_
