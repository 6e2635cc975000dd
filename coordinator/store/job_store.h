// Where jobs outlive the coordinator process: the durable record of every accepted job (its
// request as resolved, written before the client hears of the job) and, once it ends, of its
// outcome (the public Job message, every event, the whole search tree). A coordinator that
// restarts on the same store answers for the finished jobs and runs the unfinished ones again
// (docs/RELIABILITY.md). Back ends: SQLite (sqlite_job_store.h) and PostgreSQL
// (postgres_job_store.h); open_job_store.h picks one from the --job_store flag.
#ifndef ARBOR_COORDINATOR_STORE_JOB_STORE_H_
#define ARBOR_COORDINATOR_STORE_JOB_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "arbor/v1/generation.pb.h"

namespace arbor::coordinator {

// What the store knows of an accepted job when it is accepted: enough to run it again.
struct AcceptedJob {
  std::string job_id;
  std::string owner;  // The token's name that created it; empty without tokens.
  std::string client_tag;
  std::string model;              // The served model's name, for listing.
  std::string model_fingerprint;  // model/model_identity.h: a resumed job needs the same.
  absl::Time created;
  // The request as the job runs it (Job::ReplayRequest: prompt ids, seed, resolved policy,
  // stops, constraint), with client_tag and omit_reasoning as the client sent them.
  arbor::v1::GenerateRequest request;
  absl::Time deadline = absl::InfiniteFuture();  // The job's own deadline, if any.
};

// What the store keeps of a job that ended.
struct FinishedJob {
  arbor::v1::Job job;  // As GetJob answers: state, text, token ids, usage, request, policy.
  std::vector<arbor::v1::GenerateEvent> events;
  arbor::v1::Tree tree;  // The whole tree, with the top log-probabilities the job kept.
  absl::Time at;         // When it ended: retention by age counts from here.
};

struct StoredJob {
  AcceptedJob accepted;
  std::optional<FinishedJob> finished;  // Absent while the job has not ended.
};

// ListJobs' filters; an empty field does not filter.
struct JobFilter {
  std::vector<arbor::v1::JobState> states;  // Unfinished jobs list as JOB_STATE_QUEUED.
  std::optional<std::string> owner;
  std::string client_tag;
  std::string model;
  absl::Time created_after = absl::InfinitePast();     // Inclusive.
  absl::Time created_before = absl::InfiniteFuture();  // Exclusive.
  int limit = 100;
};

// Finished jobs beyond any of these bounds are deleted, oldest first; unfinished ones never.
struct JobRetention {
  absl::Duration max_age = absl::InfiniteDuration();
  int64_t max_jobs = -1;   // < 0: no bound.
  int64_t max_bytes = -1;  // The stored rows' blob bytes; < 0: no bound.
};

class JobStore {
 public:
  virtual ~JobStore() = default;

  // Durably records an accepted job; the job must not be acknowledged before this returns OK.
  // ALREADY_EXISTS for a known id.
  virtual absl::Status Accept(const AcceptedJob& job) = 0;
  // Forgets a job accepted here that then could not start (admission refused it).
  virtual absl::Status Forget(const std::string& job_id) = 0;
  // Records the end of an accepted job. NOT_FOUND for an unknown id.
  virtual absl::Status Finish(const std::string& job_id, const FinishedJob& finished) = 0;
  // NOT_FOUND for an unknown id; DATA_LOSS naming the job for a row that does not parse.
  virtual absl::StatusOr<StoredJob> Get(const std::string& job_id) = 0;
  // Newest first. With `brief` the finished jobs come without events and tree (ListJobs).
  virtual absl::StatusOr<std::vector<StoredJob>> List(const JobFilter& filter, bool brief) = 0;
  // Every job accepted and not finished, oldest first: what a restart runs again.
  virtual absl::StatusOr<std::vector<StoredJob>> Unfinished() = 0;
  // Applies `retention` at `now`; returns how many jobs went.
  virtual absl::StatusOr<int64_t> Prune(const JobRetention& retention, absl::Time now) = 0;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_STORE_JOB_STORE_H_
