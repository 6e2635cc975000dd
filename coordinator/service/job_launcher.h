// From a GenerateRequest to a running (or queued) job: validation into checked values
// (request_validation.h), the prompt tokenized (prompt.h), max_tokens resolved against the
// context, the policy resolved over the server defaults, a worker chosen (WorkerPool routing),
// the Job created with its environment (events into the job's log, re-homing through the pool)
// and admitted into the registry. Shared by Generate and Submit. It also moves the jobs of a
// worker that drains or dies (WorkerPool listener → Job::Rehome), so that they finish elsewhere.
// With a job store, a job is recorded there before it is admitted (so before the client hears
// of it) and again when it ends, and Resume runs a stored job that an earlier process, or
// another coordinator on the store, left unfinished under its own id.
#ifndef ARBOR_COORDINATOR_SERVICE_JOB_LAUNCHER_H_
#define ARBOR_COORDINATOR_SERVICE_JOB_LAUNCHER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "arbor/v1/generation.pb.h"
#include "base/callback_gate.h"
#include "base/clock.h"
#include "coordinator/cluster/tenant_quota.h"
#include "coordinator/cluster/worker_pool.h"
#include "coordinator/job/job.h"
#include "coordinator/job/timer.h"
#include "coordinator/job/worker_client.h"
#include "coordinator/service/job_metrics.h"
#include "coordinator/service/job_registry.h"
#include "coordinator/service/prompt.h"
#include "coordinator/service/request_validation.h"
#include "coordinator/store/job_store.h"
#include "entropix/policy_config.h"
#include "metrics/registry.h"
#include "rpc/tokens.h"

namespace arbor::coordinator {

struct LauncherOptions {
  ServerLimits limits;
  JobOptions job;  // job.top_k is capped by each worker's max_top_k.
  // Server default policy; an empty insert.tokens means the tokenizer's " ...".
  entropix::PolicyConfig policy;
  metrics::Registry* metrics = &metrics::DefaultRegistry();  // The jobs' metrics (job_metrics.h).
  // The token file's names: those the per-tenant refusal counter names (tenant_quota.h).
  std::vector<std::string> tenants;
};

// How a job talks to the worker it was routed to. The default speaks gRPC over the pool's stub;
// tests substitute a scripted worker.
using WorkerClientFactory = std::function<std::shared_ptr<WorkerClient>(const WorkerHandle&)>;
WorkerClientFactory GrpcWorkerClients();

// A request's prompt checked against the ready workers' model and tokenized.
struct CheckedPrompt {
  CheckedRequest request;
  std::vector<int32_t> tokens;  // Non-empty, each in the vocabulary.
  arbor::v1::ModelInfo model;
};

// FAILED_PRECONDITION naming `field` when the tokenizer produced an id outside the vocabulary
// (the coordinator's --model is not the workers' model).
absl::Status CheckVocabulary(absl::Span<const int32_t> tokens, const arbor::v1::ModelInfo& model,
                             const std::string& field);

class JobLauncher {
 public:
  // Every pointer must outlive the launcher. `timer` runs the backoff of jobs whose worker ran
  // out of KV (JobOptions::exhausted_retries). `store` may be null (jobs live in memory only).
  JobLauncher(LauncherOptions options, WorkerPool* pool, JobRegistry* registry,
              const PromptCodec* prompts, base::Clock* clock, Timer* timer,
              WorkerClientFactory clients = GrpcWorkerClients(), JobStore* store = nullptr);
  ~JobLauncher();
  JobLauncher(const JobLauncher&) = delete;
  JobLauncher& operator=(const JobLauncher&) = delete;

  // Checks, creates and admits a job. The job's deadline is the earlier of the request's
  // deadline_ms and `call_deadline` (the gRPC deadline of the call; InfiniteFuture for none).
  // INVALID_ARGUMENT naming the field, FAILED_PRECONDITION for a text prompt without a
  // tokenizer, UNAVAILABLE when no worker is ready, RESOURCE_EXHAUSTED when admission refuses
  // or the caller's tenant is at its limits (TenantQuota; checked before the job is created, and
  // its share held until the job ends). The job belongs to the caller (its name; empty when the
  // server has no tokens). With a store, the store's error when it cannot record the job.
  absl::StatusOr<std::shared_ptr<JobRecord>> Launch(
      const arbor::v1::GenerateRequest& request, absl::Time call_deadline,
      const rpc::Identity& caller = rpc::OpenIdentity());
  // Runs `stored` — accepted by an earlier process, or by another coordinator on the store, and
  // never finished; this coordinator took it over — again: the same id, seed,
  // resolved policy and prompt ids, so it makes the same tree and text. UNAVAILABLE while no
  // worker is ready and RESOURCE_EXHAUSTED while admission is full (try again later). When the
  // workers' model is not the one the job was accepted for (its fingerprint), or the job is
  // refused for another reason (limits changed since), it is recorded as failed, saying why,
  // and that error returned.
  absl::StatusOr<std::shared_ptr<JobRecord>> Resume(const StoredJob& stored);
  // From now on (the coordinator is shutting down) a job that ends cancelled stays unfinished
  // in the store, so that another coordinator on the store (or this one restarted) runs it
  // again.
  void KeepCancelledUnfinished() { keep_cancelled_unfinished_ = true; }
  // Whether the jobs of `requests` (one request's choices) fit the caller's tenant limits beside
  // what it has in flight, as TenantQuota::Check says; counts nothing. The HTTP gateway asks
  // before it launches a request of several choices, so that none starts when they cannot all.
  absl::Status CheckTenantRoom(const rpc::Identity& caller,
                               absl::Span<const arbor::v1::GenerateRequest> requests);

  // The pieces of Launch that other requests reuse (the Scorer):
  // Validation and tokenization of the prompt; UNAVAILABLE when no worker is ready.
  absl::StatusOr<CheckedPrompt> CheckPrompt(const arbor::v1::GenerateRequest& request) const;
  // The worker a job goes to (or moves to), as a client, counted as homed there until
  // WorkerPool::JobLeft; UNAVAILABLE says how to add one.
  absl::StatusOr<std::shared_ptr<WorkerClient>> Route(
      absl::Span<const int32_t> prompt, const absl::flat_hash_set<std::string>& exclude,
      WorkerHandle* handle);
  // A worker sequence id no other job or request of this coordinator uses.
  uint64_t NextSequenceId() { return sequence_ids_->fetch_add(1); }
  WorkerPool* pool() const { return pool_; }
  const PromptCodec* prompts() const { return prompts_; }

 private:
  JobEnvironment Environment(const std::shared_ptr<JobRecord>& record,
                             std::shared_ptr<WorkerClient> worker, std::vector<int32_t> prompt);
  // A job's event, through its environment's sink: metrics, tenant quota, the job's log, and at
  // the end the pool, the store and the registry.
  void OnJobEvent(const arbor::v1::GenerateEvent& e, const std::string& job_id,
                  const std::weak_ptr<JobRecord>& weak, JobMetrics::JobState& metrics_state);
  // The worker a job moves to from `from` because of `cause` (JobEnvironment::rehome).
  absl::StatusOr<std::shared_ptr<WorkerClient>> Rehome(absl::Span<const int32_t> prompt,
                                                       const WorkerClient& from,
                                                       const absl::Status& cause);
  // A job launched again under the id and creation time an earlier process gave it.
  struct Resumed {
    std::string job_id;
    absl::Time created;
  };
  // Launch's work; `resumed` set for Resume.
  absl::StatusOr<std::shared_ptr<JobRecord>> LaunchJob(const arbor::v1::GenerateRequest& request,
                                                       absl::Time call_deadline,
                                                       const rpc::Identity& caller,
                                                       const std::optional<Resumed>& resumed);
  // Routes, creates and admits the job of `spec`: Launch's part after its checks.
  // What a job's record says of it besides the job itself.
  struct RecordLabels {
    std::string client_tag;
    std::string owner;
    absl::Time created;
    std::string prompt_snippet;
  };
  // Called with the job made, before it is admitted; an error refuses the job.
  using BeforeAdmit = std::function<absl::Status(const JobRecord&)>;
  absl::StatusOr<std::shared_ptr<JobRecord>> CreateAndAdmit(JobSpec spec,
                                                            const std::vector<int32_t>& prompt,
                                                            RecordLabels labels,
                                                            const BeforeAdmit& before_admit);
  // Records `stored` as failed because of `why` and returns `why`, its message saying the job
  // could not run again (the store's error when it cannot record that).
  absl::Status FailStored(const StoredJob& stored, const absl::Status& why);
  // Records the end of `record`'s job in the store (logged when the store fails: the job stays
  // unfinished there and another coordinator, or a restart, runs it again, to the same result;
  // and when another coordinator took the job over, whose run then counts). False in that
  // last case: the job is that coordinator's to answer for.
  bool StoreFinished(const JobRecord& record);
  uint64_t RandomNonZero();
  // A worker drains or died: every job homed there moves (Job::Rehome). A job with a Run in
  // flight on a dead worker moves when that Run fails, the others at once.
  void OnWorkerEvent(const WorkerEvent& event);

  const LauncherOptions options_;
  WorkerPool* const pool_;
  JobRegistry* const registry_;
  const PromptCodec* const prompts_;
  base::Clock* const clock_;
  Timer* const timer_;
  const WorkerClientFactory clients_;
  JobStore* const store_;
  std::atomic<bool> keep_cancelled_unfinished_ = false;
  JobMetrics job_metrics_;
  TenantQuota tenant_quota_;
  entropix::PolicyConfig defaults_;  // options_.policy, insert.tokens resolved where known.
  bool insert_available_ = true;     // False: no thinking tokens known (INSERT off by default).

  // The pool's listener and the jobs' environments reach the launcher through this gate, which
  // the destructor closes: the pool calls its listeners, and the jobs' Run completions arrive on
  // gRPC's threads, after the launcher may be gone (at shutdown, for the jobs it cancelled).
  const std::shared_ptr<base::CallbackGate> gate_ = std::make_shared<base::CallbackGate>();
  // Shared with the jobs, which may still ask for ids while the launcher goes away.
  const std::shared_ptr<std::atomic<uint64_t>> sequence_ids_ =
      std::make_shared<std::atomic<uint64_t>>(0);
  absl::Mutex random_mu_;
  absl::BitGen random_ ABSL_GUARDED_BY(random_mu_);
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_JOB_LAUNCHER_H_
