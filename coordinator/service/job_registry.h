// Every job the coordinator knows, by id: running and queued jobs, and the most recently used
// finished ones (bounded LRU) so their state, events and trees stay queryable after the end.
// Admission control (admission.h) decides whether a new job starts now, waits in the bounded
// queue (it starts when a running job finishes) or is refused with RESOURCE_EXHAUSTED.
// Thread-safe; jobs are started outside the registry's lock.
#ifndef ARBOR_COORDINATOR_SERVICE_JOB_REGISTRY_H_
#define ARBOR_COORDINATOR_SERVICE_JOB_REGISTRY_H_

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "arbor/v1/generation.pb.h"
#include "coordinator/cluster/admission.h"
#include "coordinator/job/job.h"
#include "coordinator/service/event_log.h"
#include "metrics/registry.h"

namespace arbor::coordinator {

// One job as the public API sees it: the driver, its event log and what the request said.
struct JobRecord {
  JobRecord(std::string job_id, uint64_t seed, std::string client_tag, absl::Time created,
            std::string owner = "")
      : job_id(std::move(job_id)),
        seed(seed),
        client_tag(std::move(client_tag)),
        created(created),
        owner(std::move(owner)) {}

  // The public Job message; `brief` leaves out text and token ids (ListJobs).
  arbor::v1::Job ToProto(bool brief) const;
  // The bytes this record and its job keep in memory once the job has finished: the request as
  // the job holds it (prompt, stops, processors, the constraint's schema text, each copy that
  // the job and its callbacks keep), the search tree, the committed text and the event log.
  // An estimate from the containers' sizes and the messages' SpaceUsedLong, not the allocator's
  // exact count; it takes the job's lock, so call it holding no registry lock.
  size_t RetainedBytes() const;

  const std::string job_id;
  const uint64_t seed;  // As resolved (the request's 0 replaced by the one picked).
  const std::string client_tag;
  const absl::Time created;
  // The name of the token that created the job (empty without tokens): only it, and admins,
  // may see or cancel the job.
  const std::string owner;
  arbor::v1::PolicyConfig policy;  // As resolved, every field set; set before Admit.
  // What lists show of the prompt (Job.prompt_snippet); set before Admit.
  std::string prompt_snippet;
  int32_t top_logprobs = 0;  // Alternatives per node the job asked to keep.
  std::shared_ptr<Job> job;  // Set before JobRegistry::Admit, never changed after.
  EventLog events;
};

struct JobRegistryOptions {
  AdmissionLimits admission;
  // Finished jobs are kept queryable while both bounds hold; beyond either the least recently
  // used go. The byte bound matters where jobs are large (long prompts, 256 KiB schemas, wide
  // trees): a count alone lets memory grow with what each job holds.
  int finished_jobs = 1000;                                  // >= 0.
  int64_t finished_job_bytes = int64_t{512} << 20;           // >= 0 (JobRecord::RetainedBytes).
  metrics::Registry* metrics = &metrics::DefaultRegistry();  // Admission's metrics.
  // Jobs also go to a job store, which answers for an earlier process's jobs (NotFound's words).
  bool job_store = false;
};

class JobRegistry {
 public:
  explicit JobRegistry(JobRegistryOptions options);

  // Keeps `record` and starts its job now or, when every slot is taken, once one frees.
  // RESOURCE_EXHAUSTED (stating both limits) when the queue is full too, ALREADY_EXISTS for a
  // known id; the record is not kept then.
  absl::Status Admit(std::shared_ptr<JobRecord> record);

  // The job emitted its finished event: its slot goes to the oldest queued job (started here)
  // and it joins the finished jobs, evicting the least recently used beyond either bound (a job
  // larger than the byte bound alone is not kept).
  void Finished(const std::string& job_id);

  // Drops the finished job `job_id` before eviction would: another coordinator on the job store
  // took it over, and the store answers for it from now on. A no-op for a job not finished.
  void Forget(const std::string& job_id);

  // A new job id, "j<number>-<instance><random>" (4 hex digits each): the instance is what this
  // registry — this coordinator process — picked at start, so that an id an earlier process
  // gave out is told apart from one that never existed.
  std::string NewJobId();

  // What Find answers for an id it does not know (also for a job the caller may not see). For
  // an id of an earlier coordinator process it says that jobs do not outlive the process, or,
  // with a job store, that the store does not have it either.
  absl::Status NotFound(const std::string& job_id) const;

  // NOT_FOUND for an unknown or evicted id. Counts as a use of a finished job.
  absl::StatusOr<std::shared_ptr<JobRecord>> Find(const std::string& job_id);

  // Newest first, at most `limit`, only jobs in `states` (empty: all), tagged `client_tag`
  // (empty: any) and, unless `owner` is null, owned by *owner.
  std::vector<std::shared_ptr<JobRecord>> List(
      int limit, const absl::flat_hash_set<arbor::v1::JobState>& states,
      const std::string& client_tag = "", const std::string* owner = nullptr) const;

  // The jobs not finished yet (queued ones included) homed on worker `worker_id`.
  std::vector<std::shared_ptr<Job>> JobsOn(const std::string& worker_id) const;

  // Cancels every job not finished yet (shutdown: workers get their KV back).
  void CancelAll();

  AdmissionStats admission() const { return admission_.stats(); }
  // The finished jobs kept, and the bytes they retain (the sum of their RetainedBytes).
  int finished_count() const;
  int64_t finished_bytes() const;

 private:
  struct Entry {
    std::shared_ptr<JobRecord> record;
    uint64_t order = 0;  // Admission order: ties in `created` still list newest first.
    std::optional<std::list<std::string>::iterator> finished;  // Position in finished_.
    int64_t retained_bytes = 0;                                // Once finished: its RetainedBytes.
  };

  // Drops the least recently used finished jobs while either bound is exceeded.
  void Evict() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the finished job at `it`.
  void DropFinished(absl::flat_hash_map<std::string, Entry>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void Start(const std::string& job_id) ABSL_LOCKS_EXCLUDED(mu_);

  const int finished_jobs_;
  const int64_t finished_job_bytes_;
  const bool job_store_;
  Admission admission_;
  metrics::Gauge& finished_bytes_gauge_;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> jobs_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> finished_ ABSL_GUARDED_BY(mu_);  // Most recently used first.
  int64_t finished_bytes_ ABSL_GUARDED_BY(mu_) = 0;       // Their retained_bytes summed.
  uint64_t next_order_ ABSL_GUARDED_BY(mu_) = 0;

  absl::Mutex ids_mu_;
  absl::BitGen random_ ABSL_GUARDED_BY(ids_mu_);
  uint64_t next_job_number_ ABSL_GUARDED_BY(ids_mu_) = 1;
  const uint16_t instance_;  // Set before random_ serves any id.
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_JOB_REGISTRY_H_
