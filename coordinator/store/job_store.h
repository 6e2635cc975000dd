// Where jobs outlive the coordinator process: the durable record of every accepted job (its
// request as resolved, written before the client hears of the job) and, once it ends, of its
// outcome (the public Job message, every event, the whole search tree). A coordinator that
// restarts on the same store answers for the finished jobs and runs the unfinished ones again
// (docs/RELIABILITY.md). Several coordinators may share one store: each unfinished job is held
// by one of them under a lease it renews, a survivor takes over the jobs whose lease lapsed,
// and every takeover raises the job's epoch, which fences the writes of the holder it replaced.
// Back ends: SQLite (sqlite_database.h) and PostgreSQL (postgres_database.h) under one SQL
// store (sql_job_store.h); open_job_store.h picks one from the --job_store flag.
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
#include "base/clock.h"

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

// Which coordinator holds an unfinished job, and until when.
struct JobLease {
  std::string coordinator;  // Its --coordinator_id; empty for a row from before leases.
  // Where the other coordinators reach its Generation service (its --advertise, host:port):
  // they relay a Watch of the job from there. Empty until the holder knows it (it records it
  // at its next renewal), or for a holder that has none.
  std::string address;
  // The fencing token: 1 when accepted, raised by each takeover. Only the holder of the
  // current epoch may write the job.
  int64_t epoch = 0;
  absl::Time until = absl::InfinitePast();  // Past this, any coordinator may take the job over.
  bool cancel_requested = false;            // A Cancel reached a coordinator that does not hold it.
};

struct StoredJob {
  AcceptedJob accepted;
  JobLease lease;
  std::optional<FinishedJob> finished;  // Absent while the job has not ended.
};

// Who this store's coordinator is, and how long its leases last.
struct LeaseOptions {
  std::string coordinator;  // Non-empty, unique among the coordinators sharing the store.
  absl::Duration duration = absl::Seconds(10);
  base::Clock* clock = base::RealClock::Get();
};

// What a renewal found among the jobs this coordinator held.
struct LeaseRenewal {
  // Taken over by another coordinator since (this one was paused or cut off past its lease):
  // this coordinator no longer holds them, cannot write them, and must stop running them.
  std::vector<std::string> lost;
  // Still held here, and a Cancel for them reached another coordinator: cancel them here.
  std::vector<std::string> cancel_requested;
};

// Which unfinished jobs a takeover claims.
enum class Claim {
  kLapsed,        // Those whose lease lapsed, held by other coordinators: the periodic scan.
  kLapsedAndOwn,  // Those, and the ones held under this coordinator's id: at start.
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

  // Durably records an accepted job, held by this coordinator at epoch 1; the job must not be
  // acknowledged before this returns OK. ALREADY_EXISTS for a known id.
  virtual absl::Status Accept(const AcceptedJob& job) = 0;
  // Forgets a job accepted here that then could not start (admission refused it).
  virtual absl::Status Forget(const std::string& job_id) = 0;
  // Records the end of a job this coordinator holds, if it still holds it at the epoch it
  // accepted or claimed it at; either way the job is no longer held here. NOT_FOUND for an
  // unknown id; ABORTED, naming the holder, when another coordinator took it over since (or it
  // is not held here): the result is discarded and the holder's run is the one that counts.
  virtual absl::Status Finish(const std::string& job_id, const FinishedJob& finished) = 0;
  // NOT_FOUND for an unknown id; DATA_LOSS naming the job for a row that does not parse.
  virtual absl::StatusOr<StoredJob> Get(const std::string& job_id) = 0;
  // Newest first. With `brief` the finished jobs come without events and tree (ListJobs).
  virtual absl::StatusOr<std::vector<StoredJob>> List(const JobFilter& filter, bool brief) = 0;
  // Atomically claims the unfinished jobs `which` names for this coordinator, raising each one's
  // epoch and leasing it anew; oldest first. Of coordinators claiming at once, each job goes to
  // one. The caller runs them again.
  virtual absl::StatusOr<std::vector<StoredJob>> TakeOver(Claim which) = 0;
  // Extends the lease of every job this coordinator holds, in one statement, and reports the
  // ones it lost and those a Cancel asked to stop.
  virtual absl::StatusOr<LeaseRenewal> Renew() = 0;
  // Asks whichever coordinator holds `job_id` to cancel it (it learns at its next renewal);
  // returns the job as stored. A finished job is left as it ended. NOT_FOUND for an unknown id.
  virtual absl::StatusOr<StoredJob> RequestCancel(const std::string& job_id) = 0;
  // Whether this process holds `job_id` (accepted or took it over, and has not finished it).
  virtual bool Holds(const std::string& job_id) = 0;
  // Records `address` (host:port) as where other coordinators reach this one: at once on the
  // jobs it holds already (claimed at start, before it served and knew its port), then with
  // every lease it writes. Empty: none. An error leaves the address to the next renewal.
  virtual absl::Status Advertise(const std::string& address) = 0;
  // Lets go of every job held here (a clean shutdown), so that another coordinator takes them
  // over without waiting for the leases to lapse.
  virtual absl::Status Release() = 0;
  // Applies `retention` at `now`; returns how many jobs went.
  virtual absl::StatusOr<int64_t> Prune(const JobRetention& retention, absl::Time now) = 0;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_STORE_JOB_STORE_H_
