#include "coordinator/store/sql_job_store.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "coordinator/store/job_encoding.h"
#include "coordinator/store/job_schema.h"

namespace arbor::coordinator {
namespace {

// Unfinished rows hold this state and finished_ms 0 until Finish.
constexpr int64_t kUnfinished = arbor::v1::JOB_STATE_QUEUED;
constexpr int64_t kNoDeadline = -1;

// Select's columns, in the order RowToJob reads them.
constexpr char kColumns[] =
    "job_id, owner, client_tag, model, model_fingerprint, created_ms, deadline_ms, state, "
    "request, job, events, tree, coordinator, epoch, lease_until_ms, cancel_requested, "
    "coordinator_address";
constexpr char kBriefColumns[] =
    "job_id, owner, client_tag, model, model_fingerprint, created_ms, deadline_ms, state, "
    "request, job, NULL, NULL, coordinator, epoch, lease_until_ms, cancel_requested, "
    "coordinator_address";

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
  ASSIGN_OR_RETURN(out.lease.coordinator, row.Bytes(12));
  ASSIGN_OR_RETURN(out.lease.epoch, row.Int(13));
  ASSIGN_OR_RETURN(const int64_t lease_until_ms, row.Int(14));
  ASSIGN_OR_RETURN(const int64_t cancel_requested, row.Int(15));
  out.lease.until = absl::FromUnixMillis(lease_until_ms);
  out.lease.cancel_requested = cancel_requested != 0;
  ASSIGN_OR_RETURN(out.lease.address, row.Bytes(16));
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

absl::StatusOr<std::unique_ptr<SqlJobStore>> SqlJobStore::Open(std::unique_ptr<SqlDatabase> db,
                                                               LeaseOptions lease) {
  if (lease.coordinator.empty()) {
    return absl::InvalidArgumentError(
        "job store: the coordinator has no id to hold jobs under; give it --coordinator_id");
  }
  if (lease.duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("job store: the job lease must be longer than 0");
  }
  RETURN_IF_ERROR(EnsureJobSchema(*db));
  return std::unique_ptr<SqlJobStore>(new SqlJobStore(std::move(db), std::move(lease)));
}

int64_t SqlJobStore::LeaseEndMs() const {
  return absl::ToUnixMillis(lease_.clock->Now() + lease_.duration);
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
      std::move(request),
      lease_.coordinator,
      LeaseEndMs(),
      Address()};
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(
      db_->Query("INSERT INTO arbor_jobs (job_id, owner, client_tag, model, "
                 "model_fingerprint, created_ms, deadline_ms, state, finished_ms, "
                 "bytes, request, coordinator, epoch, lease_until_ms, coordinator_address) "
                 "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9, $10, $11, 1, $12, $13)",
                 params)
          .status());
  held_[job.job_id] = 1;
  return absl::OkStatus();
}

absl::Status SqlJobStore::Forget(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  held_.erase(job_id);
  return Delete({job_id});
}

absl::Status SqlJobStore::NotHeld(const std::string& job_id, int64_t epoch) {
  const SqlValue params[] = {job_id};
  ASSIGN_OR_RETURN(
      const std::vector<SqlRow> rows,
      db_->Query("SELECT coordinator, epoch FROM arbor_jobs WHERE job_id = $1", params));
  if (rows.empty()) return absl::NotFoundError(absl::StrCat("job store: no job ", job_id));
  ASSIGN_OR_RETURN(const std::string holder, rows[0].Bytes(0));
  ASSIGN_OR_RETURN(const int64_t holder_epoch, rows[0].Int(1));
  const std::string mine =
      epoch == 0 ? absl::StrCat("coordinator ", lease_.coordinator, " does not hold it")
                 : absl::StrCat("coordinator ", lease_.coordinator, " held it at epoch ", epoch,
                                " and its lease lapsed");
  return absl::AbortedError(
      absl::StrCat("job store: job ", job_id, " is coordinator ",
                   holder.empty() ? "(none)" : holder, "'s at epoch ", holder_epoch, "; ", mine,
                   ", so this write is refused and the holder's run is the one that counts"));
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
  // Built one by one: an initializer list would copy the blobs.
  std::vector<SqlValue> params;
  params.reserve(9);
  params.emplace_back(state);
  params.emplace_back(absl::ToUnixMillis(finished.at));
  params.emplace_back(bytes);
  params.emplace_back(std::move(job));
  params.emplace_back(std::move(events));
  params.emplace_back(std::move(tree));
  params.emplace_back(job_id);
  params.emplace_back(lease_.coordinator);
  absl::MutexLock lock(&mu_);
  const auto held = held_.find(job_id);
  if (held == held_.end()) return NotHeld(job_id, 0);
  // The job ended here whatever the store answers: this process writes it no more.
  const int64_t epoch = held->second;
  held_.erase(held);
  params.push_back(epoch);
  ASSIGN_OR_RETURN(
      const std::vector<SqlRow> rows,
      db_->Query("UPDATE arbor_jobs SET state = $1, finished_ms = $2, bytes = bytes + $3, "
                 "job = $4, events = $5, tree = $6 "
                 "WHERE job_id = $7 AND coordinator = $8 AND epoch = $9 RETURNING job_id",
                 params));
  if (rows.empty()) return NotHeld(job_id, epoch);
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
  absl::MutexLock lock(&mu_);
  return GetLocked(job_id);
}

absl::StatusOr<StoredJob> SqlJobStore::GetLocked(const std::string& job_id) {
  const SqlValue params[] = {job_id};
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

absl::StatusOr<std::vector<StoredJob>> SqlJobStore::TakeOver(Claim which) {
  const SqlValue params[] = {lease_.coordinator, LeaseEndMs(), Address(), kUnfinished,
                             absl::ToUnixMillis(lease_.clock->Now())};
  // A lapsed lease of another coordinator; at start, also any job held under this one's id.
  const char* claimable = which == Claim::kLapsedAndOwn
                              ? "(lease_until_ms <= $5 OR coordinator = $1)"
                              : "lease_until_ms <= $5 AND coordinator <> $1";
  absl::MutexLock lock(&mu_);
  // One statement: a row another coordinator claims first no longer matches (its lease is
  // fresh), which PostgreSQL re-checks under the row's lock and SQLite's one writer ensures.
  ASSIGN_OR_RETURN(std::vector<StoredJob> jobs,
                   Select(absl::StrCat("UPDATE arbor_jobs SET coordinator = $1, epoch = epoch + 1, "
                                       "lease_until_ms = $2, coordinator_address = $3 "
                                       "WHERE state = $4 AND ",
                                       claimable, " RETURNING ", kColumns),
                          params));
  std::sort(jobs.begin(), jobs.end(), [](const StoredJob& a, const StoredJob& b) {
    return std::tie(a.accepted.created, a.accepted.job_id) <
           std::tie(b.accepted.created, b.accepted.job_id);
  });
  for (const StoredJob& job : jobs) held_[job.accepted.job_id] = job.lease.epoch;
  return jobs;
}

absl::StatusOr<LeaseRenewal> SqlJobStore::Renew() {
  const SqlValue params[] = {LeaseEndMs(), Address(), lease_.coordinator, kUnfinished};
  absl::MutexLock lock(&mu_);
  // The address rides along: the row is rewritten for its lease anyway.
  ASSIGN_OR_RETURN(const std::vector<SqlRow> rows,
                   db_->Query("UPDATE arbor_jobs SET lease_until_ms = $1, coordinator_address = $2 "
                              "WHERE coordinator = $3 AND state = $4 "
                              "RETURNING job_id, epoch, cancel_requested",
                              params));
  LeaseRenewal out;
  absl::flat_hash_map<std::string, int64_t> kept;
  std::vector<std::pair<std::string, int64_t>> strays;
  for (const SqlRow& row : rows) {
    ASSIGN_OR_RETURN(std::string job_id, row.Bytes(0));
    ASSIGN_OR_RETURN(const int64_t epoch, row.Int(1));
    ASSIGN_OR_RETURN(const int64_t cancel_requested, row.Int(2));
    const auto held = held_.find(job_id);
    if (held == held_.end()) {
      strays.emplace_back(std::move(job_id), epoch);
    } else if (held->second == epoch) {
      if (cancel_requested != 0) out.cancel_requested.push_back(job_id);
      kept.emplace(std::move(job_id), epoch);
    }
  }
  // Held here and not renewed: another coordinator (or a later process under this id) has it.
  for (const auto& [job_id, epoch] : held_) {
    if (!kept.contains(job_id)) out.lost.push_back(job_id);
  }
  held_ = std::move(kept);
  if (!strays.empty()) RETURN_IF_ERROR(ReleaseStrays(strays));
  return out;
}

absl::Status SqlJobStore::ReleaseStrays(
    const std::vector<std::pair<std::string, int64_t>>& strays) {
  for (const auto& [job_id, epoch] : strays) {
    const SqlValue params[] = {job_id, lease_.coordinator, epoch};
    RETURN_IF_ERROR(db_->Query("UPDATE arbor_jobs SET lease_until_ms = 0 "
                               "WHERE job_id = $1 AND coordinator = $2 AND epoch = $3",
                               params)
                        .status());
  }
  return absl::OkStatus();
}

absl::StatusOr<StoredJob> SqlJobStore::RequestCancel(const std::string& job_id) {
  const SqlValue params[] = {job_id, kUnfinished};
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::vector<StoredJob> jobs,
                   Select(absl::StrCat("UPDATE arbor_jobs SET cancel_requested = 1 "
                                       "WHERE job_id = $1 AND state = $2 RETURNING ",
                                       kColumns),
                          params));
  if (!jobs.empty()) return std::move(jobs[0]);
  return GetLocked(job_id);  // Finished already (left as it ended), or unknown.
}

absl::Status SqlJobStore::Advertise(const std::string& address) {
  {
    absl::MutexLock lock(&address_mu_);
    address_ = address;
  }
  const SqlValue params[] = {address, lease_.coordinator, kUnfinished};
  absl::MutexLock lock(&mu_);
  return db_
      ->Query(
          "UPDATE arbor_jobs SET coordinator_address = $1 WHERE coordinator = $2 AND state = $3",
          params)
      .status();
}

std::string SqlJobStore::Address() const {
  absl::MutexLock lock(&address_mu_);
  return address_;
}

bool SqlJobStore::Holds(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  return held_.contains(job_id);
}

absl::Status SqlJobStore::Release() {
  const SqlValue params[] = {lease_.coordinator, kUnfinished};
  absl::MutexLock lock(&mu_);
  held_.clear();
  return db_
      ->Query("UPDATE arbor_jobs SET lease_until_ms = 0 WHERE coordinator = $1 AND state = $2",
              params)
      .status();
}

}  // namespace arbor::coordinator
