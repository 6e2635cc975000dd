#include "coordinator/store/sql_job_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "coordinator/store/job_encoding.h"

namespace arbor::coordinator {
namespace {

// Unfinished rows hold this state and finished_ms 0 until Finish.
constexpr int64_t kUnfinished = arbor::v1::JOB_STATE_QUEUED;
constexpr int64_t kNoDeadline = -1;

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS arbor_jobs ("
    " job_id TEXT PRIMARY KEY, owner TEXT NOT NULL, client_tag TEXT NOT NULL,"
    " model TEXT NOT NULL, model_fingerprint TEXT NOT NULL, created_ms BIGINT NOT NULL,"
    " deadline_ms BIGINT NOT NULL, state BIGINT NOT NULL, finished_ms BIGINT NOT NULL,"
    " bytes BIGINT NOT NULL, request $BLOB NOT NULL, job $BLOB, events $BLOB, tree $BLOB)",
    "CREATE INDEX IF NOT EXISTS arbor_jobs_created ON arbor_jobs (created_ms)",
    "CREATE INDEX IF NOT EXISTS arbor_jobs_finished ON arbor_jobs (finished_ms)",
};

// Select's columns, in the order RowToJob reads them.
constexpr char kColumns[] =
    "job_id, owner, client_tag, model, model_fingerprint, created_ms, deadline_ms, state, "
    "request, job, events, tree";
constexpr char kBriefColumns[] =
    "job_id, owner, client_tag, model, model_fingerprint, created_ms, deadline_ms, state, "
    "request, job, NULL, NULL";

absl::StatusOr<StoredJob> RowToJob(const SqlRow& row) {
  StoredJob out;
  AcceptedJob& a = out.accepted;
  ASSIGN_OR_RETURN(a.job_id, row.Bytes(0));
  ASSIGN_OR_RETURN(a.owner, row.Bytes(1));
  ASSIGN_OR_RETURN(a.client_tag, row.Bytes(2));
  ASSIGN_OR_RETURN(a.model, row.Bytes(3));
  ASSIGN_OR_RETURN(a.model_fingerprint, row.Bytes(4));
  ASSIGN_OR_RETURN(const int64_t created_ms, row.Int(5));
  ASSIGN_OR_RETURN(const int64_t deadline_ms, row.Int(6));
  ASSIGN_OR_RETURN(const int64_t state, row.Int(7));
  ASSIGN_OR_RETURN(const std::string request, row.Bytes(8));
  a.created = absl::FromUnixMillis(created_ms);
  a.deadline =
      deadline_ms == kNoDeadline ? absl::InfiniteFuture() : absl::FromUnixMillis(deadline_ms);
  RETURN_IF_ERROR(DecodeColumn(request, a.job_id, "request", a.request));
  if (state == kUnfinished) return out;
  FinishedJob& f = out.finished.emplace();
  ASSIGN_OR_RETURN(const std::string job, row.Bytes(9));
  ASSIGN_OR_RETURN(const std::string events, row.Bytes(10));
  ASSIGN_OR_RETURN(const std::string tree, row.Bytes(11));
  RETURN_IF_ERROR(DecodeColumn(job, a.job_id, "job", f.job));
  RETURN_IF_ERROR(DecodeColumn(tree, a.job_id, "tree", f.tree));
  ASSIGN_OR_RETURN(f.events, DecodeEvents(events, a.job_id));
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqlJobStore>> SqlJobStore::Open(std::unique_ptr<SqlDatabase> db) {
  for (const char* statement : kSchema) {
    const std::string sql = absl::StrReplaceAll(statement, {{"$BLOB", db->BlobType()}});
    RETURN_IF_ERROR(db->Query(sql, {}).status());
  }
  return std::unique_ptr<SqlJobStore>(new SqlJobStore(std::move(db)));
}

absl::Status SqlJobStore::Accept(const AcceptedJob& job) {
  SqlBlob request{job.request.SerializeAsString()};
  const int64_t bytes = static_cast<int64_t>(request.bytes.size());
  const SqlValue params[] = {
      job.job_id,
      job.owner,
      job.client_tag,
      job.model,
      job.model_fingerprint,
      absl::ToUnixMillis(job.created),
      job.deadline == absl::InfiniteFuture() ? kNoDeadline : absl::ToUnixMillis(job.deadline),
      kUnfinished,
      bytes,
      std::move(request)};
  absl::MutexLock lock(&mu_);
  return db_
      ->Query(
          "INSERT INTO arbor_jobs (job_id, owner, client_tag, model, model_fingerprint, "
          "created_ms, deadline_ms, state, finished_ms, bytes, request) "
          "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9, $10)",
          params)
      .status();
}

absl::Status SqlJobStore::Forget(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  return Delete({job_id});
}

absl::Status SqlJobStore::Finish(const std::string& job_id, const FinishedJob& finished) {
  SqlBlob job{finished.job.SerializeAsString()};
  SqlBlob events{EncodeEvents(finished.events)};
  SqlBlob tree{finished.tree.SerializeAsString()};
  const int64_t bytes =
      static_cast<int64_t>(job.bytes.size() + events.bytes.size() + tree.bytes.size());
  // A job that ends unspecified would read back as unfinished: it ended, so it failed.
  const int64_t state = finished.job.state() == kUnfinished ||
                                finished.job.state() == arbor::v1::JOB_STATE_RUNNING ||
                                finished.job.state() == arbor::v1::JOB_STATE_UNSPECIFIED
                            ? arbor::v1::JOB_STATE_FAILED
                            : finished.job.state();
  const SqlValue params[] = {state,
                             absl::ToUnixMillis(finished.at),
                             bytes,
                             std::move(job),
                             std::move(events),
                             std::move(tree),
                             job_id};
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(
      const std::vector<SqlRow> rows,
      db_->Query("UPDATE arbor_jobs SET state = $1, finished_ms = $2, bytes = bytes + $3, "
                 "job = $4, events = $5, tree = $6 WHERE job_id = $7 RETURNING job_id",
                 params));
  if (rows.empty()) {
    return absl::NotFoundError(absl::StrCat("job store: no job ", job_id, " to finish"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StoredJob>> SqlJobStore::Select(const std::string& sql,
                                                           absl::Span<const SqlValue> params) {
  ASSIGN_OR_RETURN(const std::vector<SqlRow> rows, db_->Query(sql, params));
  std::vector<StoredJob> jobs;
  jobs.reserve(rows.size());
  for (const SqlRow& row : rows) {
    absl::StatusOr<StoredJob> job = RowToJob(row);
    if (!job.ok()) {
      return absl::Status(job.status().code(),
                          absl::StrCat(db_->Describe(), ": ", job.status().message()));
    }
    jobs.push_back(*std::move(job));
  }
  return jobs;
}

absl::StatusOr<StoredJob> SqlJobStore::Get(const std::string& job_id) {
  const SqlValue params[] = {job_id};
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(
      std::vector<StoredJob> jobs,
      Select(absl::StrCat("SELECT ", kColumns, " FROM arbor_jobs WHERE job_id = $1"), params));
  if (jobs.empty()) return absl::NotFoundError(absl::StrCat("job store: no job ", job_id));
  return std::move(jobs[0]);
}

absl::StatusOr<std::vector<StoredJob>> SqlJobStore::List(const JobFilter& filter, bool brief) {
  std::vector<SqlValue> params;
  std::vector<std::string> where;
  // Each condition names its parameters in the order they are added.
  auto param = [&params](SqlValue value) {
    params.push_back(std::move(value));
    return absl::StrCat("$", params.size());
  };
  if (!filter.states.empty()) {
    std::vector<std::string> states;
    for (arbor::v1::JobState state : filter.states) states.push_back(param(int64_t{state}));
    where.push_back(absl::StrCat("state IN (", absl::StrJoin(states, ", "), ")"));
  }
  if (filter.owner) where.push_back("owner = " + param(*filter.owner));
  if (!filter.client_tag.empty()) where.push_back("client_tag = " + param(filter.client_tag));
  if (!filter.model.empty()) where.push_back("model = " + param(filter.model));
  if (filter.created_after != absl::InfinitePast()) {
    where.push_back("created_ms >= " + param(absl::ToUnixMillis(filter.created_after)));
  }
  if (filter.created_before != absl::InfiniteFuture()) {
    where.push_back("created_ms < " + param(absl::ToUnixMillis(filter.created_before)));
  }
  std::string sql = absl::StrCat("SELECT ", brief ? kBriefColumns : kColumns, " FROM arbor_jobs");
  if (!where.empty()) absl::StrAppend(&sql, " WHERE ", absl::StrJoin(where, " AND "));
  absl::StrAppend(&sql, " ORDER BY created_ms DESC, job_id DESC LIMIT ",
                  param(int64_t{filter.limit}));
  absl::MutexLock lock(&mu_);
  return Select(sql, params);
}

absl::StatusOr<std::vector<StoredJob>> SqlJobStore::Unfinished() {
  const SqlValue params[] = {kUnfinished};
  absl::MutexLock lock(&mu_);
  return Select(absl::StrCat("SELECT ", kColumns,
                             " FROM arbor_jobs WHERE state = $1 ORDER BY created_ms, job_id"),
                params);
}

absl::Status SqlJobStore::Delete(const std::vector<std::string>& job_ids) {
  RETURN_IF_ERROR(db_->Query("BEGIN", {}).status());
  for (const std::string& job_id : job_ids) {
    const SqlValue params[] = {job_id};
    if (absl::Status deleted =
            db_->Query("DELETE FROM arbor_jobs WHERE job_id = $1", params).status();
        !deleted.ok()) {
      (void)db_->Query("ROLLBACK", {});  // The delete's error is the one to report.
      return deleted;
    }
  }
  return db_->Query("COMMIT", {}).status();
}

absl::StatusOr<int64_t> SqlJobStore::Prune(const JobRetention& retention, absl::Time now) {
  const int64_t oldest_kept_ms = retention.max_age == absl::InfiniteDuration()
                                     ? 0
                                     : absl::ToUnixMillis(now - retention.max_age);
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const std::vector<SqlRow> rows,
                   db_->Query("SELECT job_id, bytes, finished_ms FROM arbor_jobs "
                              "WHERE finished_ms > 0 ORDER BY finished_ms DESC, job_id DESC",
                              {}));
  // Newest first: a job goes once it, or the newer ones with it, pass any bound.
  std::vector<std::string> doomed;
  int64_t kept = 0;
  int64_t bytes = 0;
  for (const SqlRow& row : rows) {
    ASSIGN_OR_RETURN(std::string job_id, row.Bytes(0));
    ASSIGN_OR_RETURN(const int64_t row_bytes, row.Int(1));
    ASSIGN_OR_RETURN(const int64_t finished_ms, row.Int(2));
    bytes += row_bytes;
    if (finished_ms < oldest_kept_ms || (retention.max_jobs >= 0 && kept >= retention.max_jobs) ||
        (retention.max_bytes >= 0 && bytes > retention.max_bytes)) {
      doomed.push_back(std::move(job_id));
    } else {
      ++kept;
    }
  }
  if (!doomed.empty()) RETURN_IF_ERROR(Delete(doomed));
  return static_cast<int64_t>(doomed.size());
}

}  // namespace arbor::coordinator
