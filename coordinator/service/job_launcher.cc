#include "coordinator/service/job_launcher.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/log_fields.h"
#include "base/status_macros.h"
#include "coordinator/service/grpc_worker_client.h"
#include "coordinator/service/job_archive.h"
#include "coordinator/service/prompt_snippet.h"
#include "policy/policy_convert.h"
#include "spdlog/spdlog.h"

namespace arbor::coordinator {
namespace {

constexpr char kHowToAddWorker[] =
    "; start one with `arbor-worker --model DIR --coordinator ADDR` (it registers itself) or list "
    "its address in `arbor-coordinator --workers`";

absl::Status NoWorker(const absl::Status& cause) {
  return absl::UnavailableError(absl::StrCat(cause.message(), kHowToAddWorker));
}

}  // namespace

WorkerClientFactory GrpcWorkerClients() {
  return [](const WorkerHandle& handle) -> std::shared_ptr<WorkerClient> {
    return std::make_shared<GrpcWorkerClient>(handle);
  };
}

JobLauncher::JobLauncher(LauncherOptions options, WorkerPool* pool, JobRegistry* registry,
                         const PromptCodec* prompts, base::Clock* clock, Timer* timer,
                         WorkerClientFactory clients, JobStore* store)
    : options_(std::move(options)),
      pool_(pool),
      registry_(registry),
      prompts_(prompts),
      clock_(clock),
      timer_(timer),
      clients_(std::move(clients)),
      store_(store),
      job_metrics_(*options_.metrics),
      tenant_quota_(options_.tenants, *options_.metrics),
      defaults_(options_.policy) {
  // Sequence ids must not collide with those a previous coordinator left on a worker.
  sequence_ids_->store(RandomNonZero() >> 1);
  pool_->AddListener([this, gate = gate_](const WorkerEvent& event) {
    if (base::CallbackGate::Pass pass = gate->Enter()) OnWorkerEvent(event);
  });
  if (defaults_.insert.tokens.empty()) {
    if (std::optional<std::vector<int32_t>> thinking = prompts_->ThinkingTokens()) {
      defaults_.insert.tokens = *thinking;
      spdlog::info("INSERT thinking tokens: \" ...\" = [{}]", absl::StrJoin(*thinking, ", "));
    } else {
      insert_available_ = false;
      defaults_.insert.max_per_job = 0;
      spdlog::warn(
          "INSERT is off by default: without a tokenizer (--model) the thinking text "
          "\" ...\" cannot be tokenized; requests may still give policy.insert.tokens");
    }
  }
}

JobLauncher::~JobLauncher() { gate_->Close(); }

void JobLauncher::OnWorkerEvent(const WorkerEvent& event) {
  const absl::Status reason =
      event.kind == WorkerEvent::kDied
          ? absl::UnavailableError(
                absl::StrCat("worker ", event.worker_id, " died: ", event.reason))
          : absl::FailedPreconditionError(
                absl::StrCat("worker ", event.worker_id, " is draining: ", event.reason));
  std::vector<std::shared_ptr<Job>> jobs = registry_->JobsOn(event.worker_id);
  if (!jobs.empty()) {
    base::WithFields({{"worker", event.worker_id}, {"event", "moving_jobs"}, {"jobs", jobs.size()}})
        .Info("moving jobs off the worker: {}", reason.ToString());
  }
  for (const std::shared_ptr<Job>& job : jobs) job->Rehome(reason);
}

uint64_t JobLauncher::RandomNonZero() {
  absl::MutexLock lock(&random_mu_);
  return absl::Uniform<uint64_t>(random_, 1, std::numeric_limits<uint64_t>::max());
}

absl::StatusOr<std::shared_ptr<WorkerClient>> JobLauncher::Route(
    absl::Span<const int32_t> prompt, const absl::flat_hash_set<std::string>& exclude,
    WorkerHandle* handle) {
  absl::StatusOr<RoutingDecision> decision = pool_->RouteJob(prompt, exclude);
  if (!decision.ok()) return NoWorker(decision.status());
  absl::StatusOr<WorkerHandle> found = pool_->Get(decision->worker_id);
  if (!found.ok()) {  // Left between routing and now.
    pool_->JobLeft(decision->worker_id);
    return NoWorker(found.status());
  }
  *handle = std::move(*found);
  return clients_(*handle);
}

JobEnvironment JobLauncher::Environment(const std::shared_ptr<JobRecord>& record,
                                        std::shared_ptr<WorkerClient> worker,
                                        std::vector<int32_t> prompt) {
  JobEnvironment env;
  env.worker = std::move(worker);
  env.next_sequence_id = [ids = sequence_ids_] { return ids->fetch_add(1); };
  env.decode = [prompts = prompts_, gate = gate_](absl::Span<const int32_t> ids) {
    base::CallbackGate::Pass pass = gate->Enter();
    return pass ? prompts->Decode(ids) : std::string();
  };
  env.clock = clock_;
  // The record owns the job, which owns these callbacks: hold the record weakly. The job calls
  // its sink for one event at a time, in order, so the metrics' per-job state needs no lock.
  env.sink = [this, gate = gate_, weak = std::weak_ptr<JobRecord>(record), job_id = record->job_id,
              metrics_state =
                  std::make_shared<JobMetrics::JobState>()](const arbor::v1::GenerateEvent& e) {
    if (base::CallbackGate::Pass pass = gate->Enter()) OnJobEvent(e, job_id, weak, *metrics_state);
  };
  env.schedule_after = [timer = timer_, gate = gate_](absl::Duration delay,
                                                      std::function<void()> callback) {
    if (base::CallbackGate::Pass pass = gate->Enter()) {
      timer->ScheduleAfter(delay, std::move(callback));
    }
  };
  env.rehome = [this, gate = gate_, prompt = std::move(prompt)](
                   const WorkerClient& from,
                   const absl::Status& cause) -> absl::StatusOr<std::shared_ptr<WorkerClient>> {
    base::CallbackGate::Pass pass = gate->Enter();
    if (!pass) return absl::UnavailableError("the coordinator is shutting down");
    return Rehome(prompt, from, cause);
  };
  return env;
}

void JobLauncher::OnJobEvent(const arbor::v1::GenerateEvent& e, const std::string& job_id,
                             const std::weak_ptr<JobRecord>& weak,
                             JobMetrics::JobState& metrics_state) {
  job_metrics_.Observe(e, metrics_state);
  if (e.has_finished()) tenant_quota_.Release(job_id);
  std::shared_ptr<JobRecord> record = weak.lock();
  if (record == nullptr) return;
  record->events.Append(e);
  if (!e.has_finished()) return;
  pool_->JobLeft(record->job->worker_id());
  // Stored before the registry may evict it, so the job is always in one or the other.
  const bool fenced = store_ != nullptr && !StoreFinished(*record);
  registry_->Finished(record->job_id);
  // Another coordinator holds the job: its run is the one to answer with, from the store.
  if (fenced) registry_->Forget(record->job_id);
}

absl::StatusOr<std::shared_ptr<WorkerClient>> JobLauncher::Rehome(absl::Span<const int32_t> prompt,
                                                                  const WorkerClient& from,
                                                                  const absl::Status& cause) {
  if (cause.code() == absl::StatusCode::kUnavailable) {
    pool_->MarkDead(from.id(), from.incarnation(), std::string(cause.message()));
  }
  // A worker that came back since the failure (a new incarnation) is not the one that failed.
  absl::flat_hash_set<std::string> exclude;
  if (pool_->IsCurrent(from.id(), from.incarnation())) exclude.insert(from.id());
  WorkerHandle handle;
  absl::StatusOr<std::shared_ptr<WorkerClient>> next = Route(prompt, exclude, &handle);
  if (!next.ok() && !exclude.empty() && cause.code() != absl::StatusCode::kUnavailable &&
      cause.code() != absl::StatusCode::kResourceExhausted) {
    // The worker lives but failed the run (e.g. its deadline) and no other can take the job:
    // try it again. (Out of KV, the job waits on its worker by itself.)
    next = Route(prompt, {}, &handle);
  }
  if (next.ok()) pool_->JobLeft(from.id());  // On failure the job stays homed there.
  return next;
}

absl::StatusOr<CheckedPrompt> JobLauncher::CheckPrompt(
    const arbor::v1::GenerateRequest& request) const {
  CheckedPrompt out;
  absl::StatusOr<arbor::v1::ModelInfo> model = pool_->Model();
  if (!model.ok()) return NoWorker(model.status());
  out.model = *std::move(model);
  ASSIGN_OR_RETURN(out.request,
                   ValidateGenerateRequest(request, out.model, options_.limits, defaults_));
  ASSIGN_OR_RETURN(out.tokens, prompts_->Encode(out.request));
  if (out.tokens.empty()) return absl::InvalidArgumentError("prompt: encodes to no tokens");
  RETURN_IF_ERROR(CheckVocabulary(out.tokens, out.model, "prompt"));
  return out;
}

absl::Status CheckVocabulary(absl::Span<const int32_t> tokens, const arbor::v1::ModelInfo& model,
                             const std::string& field) {
  for (int32_t id : tokens) {
    if (id < 0 || id >= model.vocab_size()) {
      return absl::FailedPreconditionError(absl::StrCat(
          field, ": the tokenizer produced token ", id, ", outside the workers' vocabulary [0, ",
          model.vocab_size(), "); does --model name the workers' model?"));
    }
  }
  return absl::OkStatus();
}

absl::Status JobLauncher::CheckTenantRoom(const rpc::Identity& caller,
                                          absl::Span<const arbor::v1::GenerateRequest> requests) {
  TenantUse demand;
  for (const arbor::v1::GenerateRequest& request : requests) {
    // A bad policy is Launch's to name, with its field.
    absl::StatusOr<entropix::PolicyConfig> policy =
        policy::PolicyFromProto(request.policy(), defaults_);
    if (!policy.ok()) return absl::OkStatus();
    demand.jobs += 1;
    demand.rows += policy->RowsInFlight();
  }
  return tenant_quota_.Check(caller.name, caller.limits, demand);
}

absl::StatusOr<std::shared_ptr<JobRecord>> JobLauncher::Launch(
    const arbor::v1::GenerateRequest& request, absl::Time call_deadline,
    const rpc::Identity& caller) {
  return LaunchJob(request, call_deadline, caller, std::nullopt);
}

absl::StatusOr<std::shared_ptr<JobRecord>> JobLauncher::Resume(const StoredJob& stored) {
  const AcceptedJob& accepted = stored.accepted;
  absl::StatusOr<arbor::v1::ModelInfo> model = pool_->Model();
  if (!model.ok()) return NoWorker(model.status());
  if (model->fingerprint() != accepted.model_fingerprint) {
    // Another model would make another tree: the job cannot be resumed exactly.
    return FailStored(stored, absl::FailedPreconditionError(absl::StrCat(
                                  "it was accepted for model '", accepted.model_fingerprint,
                                  "' and the workers now serve '", model->fingerprint(), "'")));
  }
  rpc::Identity owner = rpc::OpenIdentity();
  owner.name = accepted.owner;
  absl::StatusOr<std::shared_ptr<JobRecord>> resumed = LaunchJob(
      accepted.request, accepted.deadline, owner, Resumed{accepted.job_id, accepted.created});
  if (resumed.ok() || absl::IsUnavailable(resumed.status()) ||
      absl::IsResourceExhausted(resumed.status()) || absl::IsAlreadyExists(resumed.status())) {
    return resumed;  // Running (here already), or to try again shortly.
  }
  // Refused for good (limits changed since it was accepted, say): it ends here, saying why.
  return FailStored(stored, resumed.status());
}

absl::Status JobLauncher::FailStored(const StoredJob& stored, const absl::Status& why) {
  const std::string& job_id = stored.accepted.job_id;
  FinishedJob failed;
  failed.job = StoredJobMessage(stored, /*brief=*/false);
  failed.job.set_state(arbor::v1::JOB_STATE_FAILED);
  failed.job.set_finish_reason(arbor::v1::FINISH_REASON_ERROR);
  failed.job.set_error(absl::StrCat(
      "its coordinator restarted or stopped, and the job could not be run again exactly: ",
      why.message()));
  arbor::v1::GenerateEvent& finished = failed.events.emplace_back();
  finished.set_job_id(job_id);
  finished.mutable_finished()->set_reason(arbor::v1::FINISH_REASON_ERROR);
  finished.mutable_finished()->set_error(failed.job.error());
  failed.at = clock_->Now();
  RETURN_IF_ERROR(store_->Finish(job_id, failed));
  return absl::Status(why.code(), failed.job.error());
}

absl::StatusOr<std::shared_ptr<JobRecord>> JobLauncher::LaunchJob(
    const arbor::v1::GenerateRequest& request, absl::Time call_deadline,
    const rpc::Identity& caller, const std::optional<Resumed>& resumed) {
  ASSIGN_OR_RETURN(CheckedPrompt checked_prompt, CheckPrompt(request));
  const CheckedRequest& checked = checked_prompt.request;
  const std::vector<int32_t>& prompt = checked_prompt.tokens;
  const arbor::v1::ModelInfo* model = &checked_prompt.model;
  ASSIGN_OR_RETURN(
      const int32_t max_tokens,
      ResolveMaxTokens(checked, static_cast<int64_t>(prompt.size()), *model, options_.limits));

  const absl::Time now = clock_->Now();
  JobSpec spec;
  spec.job_id = resumed ? resumed->job_id : registry_->NewJobId();
  spec.prompt_token_ids = prompt;
  spec.vocab_size = model->vocab_size();
  spec.max_context = model->max_context();
  spec.max_tokens = max_tokens;
  spec.seed = checked.seed != 0 ? checked.seed : RandomNonZero();
  spec.policy = checked.policy;
  spec.answer_pattern = checked.answer_pattern;
  spec.eos_token_ids.assign(model->eos_token_ids().begin(), model->eos_token_ids().end());
  spec.ignore_eos = checked.ignore_eos;
  spec.stop_token_ids = checked.stop_token_ids;
  spec.processors = checked.processors;
  spec.constraint = checked.constraint;
  // A thinking token inserted into a JSON document would break it.
  if (checked.constraint.kind_case() != arbor::v1::OutputConstraint::KIND_NOT_SET) {
    spec.policy.insert.max_per_job = 0;
  }
  spec.stop_strings = checked.stop_strings;
  spec.top_logprobs = checked.top_logprobs;
  spec.reasoning = checked.reasoning;
  spec.deadline = std::min(call_deadline, checked.deadline == absl::InfiniteDuration()
                                              ? absl::InfiniteFuture()
                                              : now + checked.deadline);
  // Before the job exists, so that a refusal costs nothing; the share comes back when the job
  // ends (its finished event, whatever the end) or when it cannot start here.
  const std::string job_id = spec.job_id;
  RETURN_IF_ERROR(
      tenant_quota_.Reserve(job_id, caller.name, caller.limits, spec.policy.RowsInFlight()));
  // A new job is recorded before admission can start it (and before the client hears of it); a
  // resumed one is recorded already.
  const absl::Time deadline = spec.deadline;
  bool stored = false;
  auto before_admit = [&](const JobRecord& record) -> absl::Status {
    if (store_ == nullptr || resumed) return absl::OkStatus();
    RETURN_IF_ERROR(store_->Accept(AcceptedOf(record, request, *model, deadline)));
    stored = true;
    return absl::OkStatus();
  };
  absl::StatusOr<std::shared_ptr<JobRecord>> record = CreateAndAdmit(
      std::move(spec), prompt,
      {checked.client_tag, caller.name, resumed ? resumed->created : now, PromptSnippet(request)},
      before_admit);
  if (!record.ok()) {
    tenant_quota_.Release(job_id);
    if (stored) {
      if (absl::Status forgot = store_->Forget(job_id); !forgot.ok()) {
        // Left unfinished there, a restart would run a job its client was told was refused.
        spdlog::error("job {}: refused, and the job store kept it: {}", job_id, forgot.ToString());
      }
    }
  }
  return record;
}

bool JobLauncher::StoreFinished(const JobRecord& record) {
  if (keep_cancelled_unfinished_ && record.job->state() == arbor::v1::JOB_STATE_CANCELLED) {
    return true;
  }
  const absl::Status stored =
      store_->Finish(record.job_id, FinishedOf(record, *prompts_, clock_->Now()));
  if (absl::IsAborted(stored)) {
    // Fenced: another coordinator took the job over, and its run is the one recorded.
    base::WithFields({{"job_id", record.job_id}, {"event", "store_fenced"}})
        .Warn("job store: the end of the job here was not recorded: {}", stored.ToString());
    return false;
  }
  if (!stored.ok()) {
    base::WithFields({{"job_id", record.job_id}, {"event", "store_failed"}})
        .Log(spdlog::level::err,
             "job store: the end of the job was not recorded (another coordinator, or this one "
             "restarted, runs it again): {}",
             stored.ToString());
  }
  return true;
}

absl::StatusOr<std::shared_ptr<JobRecord>> JobLauncher::CreateAndAdmit(
    JobSpec spec, const std::vector<int32_t>& prompt, RecordLabels labels,
    const BeforeAdmit& before_admit) {
  const int32_t max_tokens = spec.max_tokens;
  WorkerHandle handle;
  ASSIGN_OR_RETURN(std::shared_ptr<WorkerClient> worker, Route(prompt, {}, &handle));
  JobOptions job_options = options_.job;
  if (handle.info.max_top_k() > 0) {
    job_options.top_k = std::min(job_options.top_k, handle.info.max_top_k());
  }
  if (job_options.top_k < spec.top_logprobs || job_options.top_k < spec.policy.branch.width) {
    pool_->JobLeft(handle.worker_id);
    return absl::InvalidArgumentError(
        absl::StrCat(job_options.top_k < spec.top_logprobs ? "top_logprobs" : "policy.branch.width",
                     ": more than the ", job_options.top_k, " alternatives worker ",
                     handle.worker_id, " returns per step"));
  }
  auto record = std::make_shared<JobRecord>(spec.job_id, spec.seed, std::move(labels.client_tag),
                                            labels.created, std::move(labels.owner));
  record->policy = policy::PolicyToProto(spec.policy);
  record->prompt_snippet = std::move(labels.prompt_snippet);
  record->top_logprobs = spec.top_logprobs;
  absl::StatusOr<std::shared_ptr<Job>> job =
      Job::Create(std::move(spec), job_options, Environment(record, std::move(worker), prompt));
  if (!job.ok()) {
    pool_->JobLeft(handle.worker_id);
    return job.status();
  }
  record->job = std::move(*job);
  if (absl::Status ready = before_admit(*record); !ready.ok()) {
    pool_->JobLeft(handle.worker_id);
    return ready;
  }
  // Before admission, which may start the job (and log that) at once.
  base::WithFields({{"job_id", record->job_id},
                    {"worker", handle.worker_id},
                    {"event", "submitted"},
                    {"prompt_tokens", prompt.size()},
                    {"max_tokens", max_tokens}})
      .Info("job submitted");
  if (absl::Status admitted = registry_->Admit(record); !admitted.ok()) {
    base::WithFields({{"job_id", record->job_id},
                      {"worker", handle.worker_id},
                      {"event", "rejected"},
                      {"error", admitted.ToString()}})
        .Info("job rejected");
    pool_->JobLeft(handle.worker_id);
    return admitted;
  }
  return record;
}

}  // namespace arbor::coordinator
