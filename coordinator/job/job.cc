#include "coordinator/job/job.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/log_fields.h"
#include "base/status_macros.h"
#include "coordinator/tree/tree_export.h"
#include "spdlog/spdlog.h"

namespace arbor::coordinator {
using arbor::v1::StepResult;

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
      main_(main_sequence, spec_.prompt_token_ids),
      planner_(std::move(planner)),
      output_(spec_, env_.decode, env_.clock,
              [this](arbor::v1::GenerateEvent event) {
                // Under mu_: every event is sent by the job while it holds its lock.
                actions_.Push([sink = env_.sink, event = std::move(event)] { sink(event); });
              }),
      host_({&spec_, &tree_, &builder_, planner_.get(), &output_, &used_, env_.next_sequence_id,
             env_.decode,
             [this](arbor::v1::RunRequest request, std::vector<uint64_t> ids) {
               SendRun(std::move(request), std::move(ids));
             },
             [this](std::vector<uint64_t> ids) { Release(std::move(ids)); }}) {}

// --- entry points (no lock held on entry) ---------------------------------------------------

void Job::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (!life_.Start()) return;
    base::WithFields(LogFieldsFor("started")).Info("job started");
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
        HandleFailure(response.status());
      } else {
        const size_t expected = done.sequence_ids.size();
        if (static_cast<size_t>(response->results_size()) != expected) {
          Fail(absl::InternalError(absl::StrCat("worker answered ", response->results_size(),
                                                " results for ", expected, " items")));
        } else {
          session_.Succeeded();
          if (branch_) {
            OnBranchDone(*response);
          } else {
            OnMainDone(response->results(0));
          }
        }
      }
    }
  }
  actions_.Drain();
}

// --- the driver (mu_ held) --------------------------------------------------------------------

void Job::Continue() {
  if (env_.clock->Now() >= spec_.deadline) return Finish(arbor::v1::FINISH_REASON_DEADLINE);
  if (session_.moving()) return;  // Move() continues on the new worker.
  if (std::optional<absl::Status> reason = session_.TakeDeferredMove()) {
    return RequestMove(*std::move(reason), /*forced=*/false);
  }
  if (!branch_) return SendMainRun();
  SendBranch();
}

void Job::SendBranch() {
  BranchStrategy::Next sent = branch_->Send(host_);
  if (!sent.ok()) return Fail(sent.status());
  if (*sent) CommitBranch(**std::move(sent));
}

void Job::OnBranchDone(const arbor::v1::RunResponse& response) {
  ShowTraces(response.results());  // Before the strategy ends any of them.
  BranchStrategy::Next next = branch_->OnDone(host_, response);
  if (!next.ok()) return Fail(next.status());
  if (*next) return CommitBranch(**std::move(next));
  Continue();
}

void Job::CommitBranch(BranchCommit commit) {
  absl::StatusOr<BranchResolution> resolution =
      tree_.ResolveBranch(branch_->point(), commit.winner_leaf, commit.scores);
  if (!resolution.ok()) return Fail(resolution.status());
  std::vector<uint64_t> released;
  for (uint64_t id : branch_->Sequences()) {
    if (id != commit.main_sequence) released.push_back(id);
  }
  if (main_.live() && main_.id() != commit.main_sequence) released.push_back(main_.id());
  Release(std::move(released));
  main_.Adopt(commit.main_sequence, std::move(commit.source));
  branch_.reset();
  output_.reasoning().EndAll();
  output_.SendResolved(*resolution, commit.scores, commit.reason);
  for (NodeId id : resolution->committed_nodes) {
    if (!EmitCommitted(id)) return;
  }
  if (IsStopToken(tree_.node(tree_.tail()).token_id)) {
    return Finish(arbor::v1::FINISH_REASON_STOP_TOKEN);
  }
  if (commit.stop == arbor::v1::STOP_REASON_CONTEXT) {
    return Finish(arbor::v1::FINISH_REASON_CONTEXT);
  }
  Continue();
}

void Job::Fallback() {
  main_.SkipStructuralOnce();
  Continue();
}

void Job::Finish(arbor::v1::FinishReason reason, std::string error) {
  const char* what = life_.End(reason, std::move(error));
  std::vector<uint64_t> live = LiveSequences();
  // A Run in flight is stopped, so that the worker computes nothing more for the job; it may
  // still have created its sequences, which are released again when it completes.
  if (const auto& in_flight = session_.in_flight()) {
    live.insert(live.end(), in_flight->sequence_ids.begin(), in_flight->sequence_ids.end());
    actions_.Push([cancel = in_flight->cancel] { cancel->Cancel(); });
  }
  Release(std::move(live));
  main_.Released();
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

bool Job::EmitCommitted(NodeId id) {
  const bool final = spec_.policy.mode != entropix::PolicyMode::kSearch ||
                     used_.backspaces_used >= spec_.policy.backspace.max_per_job;
  if (!output_.SendToken(tree_, id, final)) return true;
  Finish(arbor::v1::FINISH_REASON_STOP_STRING);
  return false;
}

void Job::Release(std::vector<uint64_t> ids) {
  if (ids.empty()) return;
  actions_.Push([worker = session_.worker(), ids = std::move(ids)]() mutable {
    worker->Release(std::move(ids));
  });
}

std::vector<uint64_t> Job::LiveSequences() const {
  std::vector<uint64_t> live;
  if (main_.live()) live.push_back(main_.id());
  if (branch_) {
    const std::vector<uint64_t> branch = branch_->Sequences();
    live.insert(live.end(), branch.begin(), branch.end());
  }
  return live;
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

}  // namespace arbor::coordinator
