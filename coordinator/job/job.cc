#include "coordinator/job/job.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/log_fields.h"
#include "base/status_macros.h"
#include "coordinator/tree/tree_export.h"
#include "policy/policy_convert.h"
#include "spdlog/spdlog.h"

namespace arbor::coordinator {

absl::StatusOr<std::shared_ptr<Job>> Job::Create(JobSpec spec, JobOptions options,
                                                 JobEnvironment env) {
  if (spec.policy.insert.tokens.empty() && spec.policy.insert.max_per_job > 0) {
    return absl::InvalidArgumentError("policy.insert.tokens must be resolved before the job");
  }
  if (spec.policy.mode == entropix::PolicyMode::kTrace &&
      !spec.policy.trace.answer_pattern.empty() && spec.answer_pattern == nullptr) {
    return absl::InvalidArgumentError(
        "policy.trace.answer_pattern must be compiled before the job");
  }
  if (spec.max_tokens < 1 ||
      static_cast<int64_t>(spec.prompt_token_ids.size()) + spec.max_tokens > spec.max_context) {
    return absl::InvalidArgumentError(absl::StrCat("max_tokens: ", spec.max_tokens,
                                                   " does not fit the context ", spec.max_context));
  }
  if (options.steps_per_run < 1 || options.first_run_steps < 1 ||
      options.top_k < std::max(1, spec.top_logprobs) || options.top_k < spec.policy.ForkWidth()) {
    return absl::InvalidArgumentError(
        "job options: steps_per_run and first_run_steps >= 1 and "
        "top_k must cover top_logprobs and the fork width");
  }
  std::unique_ptr<BranchPlanner> planner = BranchPlanner::Create(spec.policy, spec.answer_pattern);
  if (!env.worker || !env.next_sequence_id || !env.decode || env.clock == nullptr || !env.sink ||
      !env.rehome) {
    return absl::InvalidArgumentError("job environment is incomplete");
  }
  const uint64_t main_sequence = env.next_sequence_id();
  ASSIGN_OR_RETURN(SearchTree tree,
                   SearchTree::Create(spec.prompt_token_ids, spec.vocab_size, main_sequence));
  RunBuilder builder = RunBuilder::ForJob(spec, options.top_k);
  std::shared_ptr<Job> job(new Job(std::move(spec), options, std::move(env), std::move(tree),
                                   std::move(builder), std::move(planner), main_sequence));
  return job;
}

Job::Job(JobSpec spec, JobOptions options, JobEnvironment env, SearchTree tree, RunBuilder builder,
         std::unique_ptr<BranchPlanner> planner, uint64_t main_sequence)
    : spec_(std::move(spec)),
      options_(options),
      env_(std::move(env)),
      builder_(std::move(builder)),
      tree_(std::move(tree)),
      session_(env_.worker, {options_.exhausted_backoff, options_.max_backoff, options_.max_wait,
                             options_.max_consecutive_failures, options_.exhausted_retries}),
      output_(spec_, env_.decode, env_.clock,
              [this](arbor::v1::GenerateEvent event) {
                // Under mu_: every event is sent by the job while it holds its lock.
                actions_.Push([sink = env_.sink, event = std::move(event)] { sink(event); });
              }),
      path_({&spec_, &options_, &builder_, &tree_, &output_, this, env_.next_sequence_id,
             env_.decode},
            main_sequence, std::move(planner)),
      failover_({&spec_, env_.clock, env_.schedule_after, this, &path_, &output_, &session_, &life_,
                 &actions_}) {}

// --- entry points (no lock held on entry) ---------------------------------------------------

void Job::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (!life_.Start()) return;
    base::WithFields(LogFieldsFor("started", {})).Info("job started");
    Continue();
  }
  actions_.Drain();
}

void Job::Cancel() {
  {
    absl::MutexLock lock(&mu_);
    if (!life_.ended()) Finish(arbor::v1::FINISH_REASON_CANCELLED);
  }
  actions_.Drain();
}

void Job::Abandon(const absl::Status& why) {
  {
    absl::MutexLock lock(&mu_);
    if (!life_.ended()) Fail(why);
  }
  actions_.Drain();
}

void Job::Rehome(absl::Status reason) {
  std::shared_ptr<WorkerClient> abandon;
  {
    absl::MutexLock lock(&mu_);
    abandon = failover_.Rehome(std::move(reason));
  }
  if (abandon != nullptr) abandon->AbandonRuns();
  actions_.Drain();
}

void Job::OnRunDone(uint64_t generation, absl::StatusOr<arbor::v1::RunResponse> response) {
  {
    absl::MutexLock lock(&mu_);
    if (std::optional<WorkerSession::InFlight> completed = session_.Completed(generation)) {
      const WorkerSession::InFlight& done = *completed;
      output_.RunDone(env_.clock->Now() - done.sent);
      if (life_.ended()) {
        // The job ended while the run was in flight: drop what the run created.
        actions_.Push([worker = done.worker, ids = done.sequence_ids]() mutable {
          worker->Release(std::move(ids));
        });
      } else if (!response.ok()) {
        // Only RESOURCE_EXHAUSTED guarantees the worker wrote nothing: after a deadline or a
        // broken call the run may have created its sequences on a live worker, and the job
        // moves away or ends, so hand them back (unknown ids are ignored).
        if (response.status().code() != absl::StatusCode::kResourceExhausted) {
          actions_.Push([worker = done.worker, ids = done.sequence_ids]() mutable {
            worker->Release(std::move(ids));
          });
        }
        failover_.HandleFailure(response.status());
      } else {
        const size_t expected = done.sequence_ids.size();
        if (static_cast<size_t>(response->results_size()) != expected) {
          Fail(absl::InternalError(absl::StrCat("worker answered ", response->results_size(),
                                                " results for ", expected, " items")));
        } else {
          session_.Succeeded();
          if (absl::Status failed = path_.OnDone(*response); !failed.ok()) {
            failover_.HandleFailure(failed);
          }
        }
      }
    }
  }
  actions_.Drain();
}

void Job::OnRunProgress(uint64_t generation, const arbor::v1::RunProgress& progress) {
  {
    absl::MutexLock lock(&mu_);
    // Only the run in flight: a late update of an earlier run, or one after the job ended,
    // changes nothing.
    if (life_.ended() || !session_.in_flight() || session_.in_flight()->generation != generation) {
      return;
    }
    path_.OnProgress(progress);
  }
  actions_.Drain();
}

void Job::Move(absl::Status cause, bool forced) {
  std::shared_ptr<WorkerClient> from;
  {
    absl::MutexLock lock(&mu_);
    if (life_.ended()) return;
    from = session_.worker();
  }
  absl::StatusOr<std::shared_ptr<WorkerClient>> next = env_.rehome(*from, cause);
  {
    absl::MutexLock lock(&mu_);
    if (life_.ended()) {
      session_.MoveAbandoned();
      return;
    }
    failover_.Moved(*from, std::move(next), cause, forced);
  }
  actions_.Drain();
}

void Job::Retry(uint64_t generation, bool move) {
  {
    absl::MutexLock lock(&mu_);
    if (!failover_.Retry(generation, move)) return;
  }
  actions_.Drain();
}

std::shared_ptr<JobControl> Job::Hold() {
  // Aliasing: JobControl is a private base, which shared_ptr's conversion cannot see.
  return std::shared_ptr<JobControl>(shared_from_this(), this);
}

// --- the driver (mu_ held) --------------------------------------------------------------------

void Job::Continue() {
  if (env_.clock->Now() >= spec_.deadline) return Finish(arbor::v1::FINISH_REASON_DEADLINE);
  if (session_.moving()) return;  // Move() continues on the new worker.
  if (std::optional<absl::Status> reason = session_.TakeDeferredMove()) {
    return failover_.RequestMove(*std::move(reason), /*forced=*/false);
  }
  path_.Send();
}

void Job::SendRun(arbor::v1::RunRequest request, std::vector<uint64_t> ids) {
  const absl::Time now = env_.clock->Now();
  output_.RunSent();
  request.set_job_id(spec_.job_id);  // The worker shares crowded steps fairly between jobs.
  const absl::Duration timeout =
      std::max(absl::Milliseconds(1), std::min(options_.run_timeout, spec_.deadline - now));
  const uint64_t generation = session_.Sent(std::move(ids), now);
  WorkerClient::ProgressCallback progress;
  // A branch's progress is only shown as the traces' text: none is asked for without a reader.
  if (options_.stream_runs && (!path_.branch_open() || spec_.reasoning)) {
    progress = [self = shared_from_this(), generation](const arbor::v1::RunProgress& update) {
      self->OnRunProgress(generation, update);
    };
  }
  actions_.Push([self = shared_from_this(), worker = session_.worker(),
                 request = std::move(request), timeout, generation, progress = std::move(progress),
                 cancel = session_.in_flight()->cancel]() mutable {
    worker->Run(
        std::move(request), timeout,
        [self, generation](absl::StatusOr<arbor::v1::RunResponse> response) {
          self->OnRunDone(generation, std::move(response));
        },
        std::move(progress), std::move(cancel));
  });
}

void Job::End(arbor::v1::FinishReason reason, std::string error) {
  const char* what = life_.End(reason, std::move(error));
  std::vector<uint64_t> live = path_.EndSequences();
  // A Run in flight is stopped, so that the worker computes nothing more for the job; it may
  // still have created its sequences, which are released again when it completes.
  if (const auto& in_flight = session_.in_flight()) {
    live.insert(live.end(), in_flight->sequence_ids.begin(), in_flight->sequence_ids.end());
    actions_.Push([cancel = in_flight->cancel] { cancel->Cancel(); });
  }
  Release(std::move(live));
  base::LogFields fields = LogFieldsFor(what, {{"reason", arbor::v1::FinishReason_Name(reason)},
                                               {"generated_tokens", tree_.GeneratedTokenCount()},
                                               {"total_ms", output_.SinceCreated() / 1000}});
  if (!life_.error().empty()) fields.emplace_back("error", life_.error());
  base::WithFields(std::move(fields))
      .Log(life_.error().empty() ? spdlog::level::info : spdlog::level::warn, "job {}", what);
  output_.reasoning().EndAll();
  output_.SendFinished(reason, life_.error(), tree_);
}

// --- helpers (mu_ held) -----------------------------------------------------------------------

base::LogFields Job::LogFieldsFor(std::string_view event, base::LogFields more) const {
  base::LogFields fields = {
      {"job_id", spec_.job_id}, {"worker", session_.worker()->id()}, {"event", event}};
  fields.insert(fields.end(), std::make_move_iterator(more.begin()),
                std::make_move_iterator(more.end()));
  return fields;
}

void Job::Release(std::vector<uint64_t> ids) {
  if (ids.empty()) return;
  actions_.Push([worker = session_.worker(), ids = std::move(ids)]() mutable {
    worker->Release(std::move(ids));
  });
}

// --- accessors --------------------------------------------------------------------------------

arbor::v1::JobState Job::state() const {
  absl::MutexLock lock(&mu_);
  return life_.state();
}

arbor::v1::FinishReason Job::finish_reason() const {
  absl::MutexLock lock(&mu_);
  return life_.reason();
}

std::string Job::error() const {
  absl::MutexLock lock(&mu_);
  return life_.error();
}

std::string Job::worker_id() const {
  absl::MutexLock lock(&mu_);
  return session_.worker()->id();
}

int32_t Job::rehomed() const {
  absl::MutexLock lock(&mu_);
  return session_.rehomed();
}

int32_t Job::reprefilled() const {
  absl::MutexLock lock(&mu_);
  return session_.reprefills();
}

std::string Job::text() const {
  absl::MutexLock lock(&mu_);
  return output_.text();
}

std::vector<int32_t> Job::token_ids() const {
  absl::MutexLock lock(&mu_);
  return tree_.CommittedTokenIds();
}

arbor::v1::Usage Job::usage() const {
  absl::MutexLock lock(&mu_);
  return output_.Usage(tree_);
}

arbor::v1::Timings Job::timings() const {
  absl::MutexLock lock(&mu_);
  return output_.timings();
}

arbor::v1::StrategyCounts Job::strategy_counts() const {
  absl::MutexLock lock(&mu_);
  return output_.counts();
}

void Job::ReadTree(absl::FunctionRef<void(const SearchTree&)> read) const {
  absl::MutexLock lock(&mu_);
  read(tree_);
}

// --- replay ---------------------------------------------------------------------------------

arbor::v1::GenerateRequest Job::ReplayRequest() const {
  arbor::v1::GenerateRequest r;
  r.mutable_tokens()->mutable_token_ids()->Add(spec_.prompt_token_ids.begin(),
                                               spec_.prompt_token_ids.end());
  r.set_max_tokens(spec_.max_tokens);
  r.set_seed(spec_.seed);
  *r.mutable_policy() = policy::PolicyToProto(spec_.policy);
  r.mutable_stop()->mutable_stop_token_ids()->Add(spec_.stop_token_ids.begin(),
                                                  spec_.stop_token_ids.end());
  for (const std::string& s : spec_.stop_strings) r.mutable_stop()->add_stop_strings(s);
  r.mutable_stop()->set_ignore_eos(spec_.ignore_eos);
  r.set_top_logprobs(spec_.top_logprobs);
  *r.mutable_processors() = spec_.processors;
  if (spec_.constraint.kind_case() != arbor::v1::OutputConstraint::KIND_NOT_SET) {
    *r.mutable_constraint() = spec_.constraint;
  }
  return r;
}

absl::StatusOr<arbor::v1::GenerateRequest> Job::ReplayRequest(
    const arbor::v1::PolicyConfig& change) const {
  arbor::v1::GenerateRequest r = ReplayRequest();
  ASSIGN_OR_RETURN(*r.mutable_policy(), policy::ChangedPolicy(spec_.policy, change));
  return r;
}

}  // namespace arbor::coordinator
