// The job's main path: its Runs (streamed from the worker step by step, JobOptions::stream_runs)
// and the steps they bring, each recorded into the tree and sent to the client as it arrives;
// a structural stop hands over to job_structural.cc. Part of class Job (job.h), under mu_ but
// for OnRunProgress, an entry point.
#include <algorithm>
#include <ranges>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/job/job.h"
#include "coordinator/job/stored_distribution.h"

namespace arbor::coordinator {
using arbor::v1::StepResult;

void Job::SendMainRun() {
  if (host_.Remaining() <= 0) return Finish(arbor::v1::FINISH_REASON_MAX_TOKENS);
  if (tree_.NextPosition() >= spec_.max_context) return Finish(arbor::v1::FINISH_REASON_CONTEXT);
  const bool search = spec_.policy.mode == entropix::PolicyMode::kSearch ||
                      spec_.policy.mode == entropix::PolicyMode::kTrace;
  const int32_t ramp = options_.stream_runs
                           ? options_.steps_per_run
                           : std::max(options_.first_run_steps, tree_.GeneratedTokenCount());
  const int32_t max_steps =
      main_.structural_off_once() ? 1 : std::min({ramp, options_.steps_per_run, host_.Remaining()});
  arbor::v1::RunRequest request;
  arbor::v1::RunItem& item = *request.add_items();
  item = builder_.MainItem(main_.id(), main_.source(), max_steps,
                           search && !main_.structural_off_once(), host_.Budgets());
  if (planner_->branching_off()) item.set_branch_depth(spec_.policy.MaxForkDepth());
  main_.RunSent();
  SendRun(std::move(request), {main_.id()});
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
  if (options_.stream_runs && (!branch_ || spec_.reasoning)) {
    progress = [self = shared_from_this(), generation](const arbor::v1::RunProgress& update) {
      self->OnRunProgress(generation, update);
    };
  }
  actions_.Push([self = shared_from_this(), worker = session_.worker(),
                 request = std::move(request), timeout, generation,
                 progress = std::move(progress), cancel = session_.in_flight()->cancel]() mutable {
    worker->Run(
        std::move(request), timeout,
        [self, generation](absl::StatusOr<arbor::v1::RunResponse> response) {
          self->OnRunDone(generation, std::move(response));
        },
        std::move(progress), std::move(cancel));
  });
}

void Job::OnMainDone(const arbor::v1::RunResult& result) {
  if (main_.RanOnce()) output_.AddCachedPromptTokens(result.cached_tokens());
  const StepResult* structural = nullptr;
  // The run's leading steps already came as progress and are in the tree.
  const int recorded = main_.TakeStepsRecorded();
  for (const StepResult& step : result.steps() | std::views::drop(recorded)) {
    if (step.token_id() < 0) {
      structural = &step;
      break;
    }
    if (!RecordMainStep(step)) return;
  }
  switch (result.stop_reason()) {
    case arbor::v1::STOP_REASON_STRUCTURAL:
      if (structural == nullptr) {
        return Fail(absl::InternalError("structural stop without a structural step"));
      }
      return ApplyStructural(*structural);
    case arbor::v1::STOP_REASON_STOP_TOKEN:
      return Finish(arbor::v1::FINISH_REASON_STOP_TOKEN);
    case arbor::v1::STOP_REASON_CONTEXT:
      return Finish(arbor::v1::FINISH_REASON_CONTEXT);
    case arbor::v1::STOP_REASON_KV_EXHAUSTED:
      return HandleFailure(absl::ResourceExhaustedError("worker KV exhausted mid-run"));
    case arbor::v1::STOP_REASON_CANCELLED:
      return HandleFailure(absl::UnavailableError("worker cancelled the run"));
    default:  // MAX_STEPS (CALM only applies to rollouts).
      return Continue();
  }
}

void Job::OnRunProgress(uint64_t generation, const arbor::v1::RunProgress& progress) {
  {
    absl::MutexLock lock(&mu_);
    // Only the run in flight: a late update of an earlier run, or one after the job ended,
    // changes nothing. A branch's rollouts are recorded when their Run answers; until then
    // their text goes to the client as the traces' text.
    if (life_.ended() || !session_.in_flight() ||
        session_.in_flight()->generation != generation) {
      return;
    }
    if (branch_) {
      ShowTraces(progress.results());
    } else if (progress.results_size() == 1) {
      for (const StepResult& step : progress.results(0).steps()) {
        if (step.token_id() < 0 || !RecordMainStep(step)) break;
        main_.StepRecorded();
      }
    }
  }
  actions_.Drain();
}

void Job::ShowTraces(
    const google::protobuf::RepeatedPtrField<arbor::v1::RunResult>& results) {
  for (const arbor::v1::RunResult& result : results) {
    for (const StepResult& step : result.steps()) {
      if (step.token_id() < 0) break;
      output_.reasoning().Extend(result.sequence_id(), step.position(), step.token_id());
    }
  }
}

bool Job::RecordMainStep(const StepResult& step) {
  if (step.position() != tree_.NextPosition()) {
    Fail(absl::InternalError(absl::StrCat("worker step at position ", step.position(),
                                          ", expected ", tree_.NextPosition())));
    return false;
  }
  output_.Count(step.strategy());
  planner_->OnMainStep(step);
  const Step tree_step = TreeStep(step, main_.id());
  if (step.strategy() == arbor::v1::STRATEGY_INSERT) {
    // CANONICAL: the worker appended the thinking token itself.
    absl::StatusOr<NodeId> id = tree_.Insert(tree_step);
    if (!id.ok()) {
      Fail(id.status());
      return false;
    }
    ++used_.inserts_used;
    used_.last_insert_position = step.position();
    arbor::v1::GenerateEvent event;
    event.mutable_insert()->add_node_ids(*id);
    event.mutable_insert()->add_token_ids(step.token_id());
    event.mutable_insert()->add_logprobs(tree_step.logprob);
    const bool stopped = output_.PushText(tree_, *id, event.mutable_insert()->mutable_text());
    output_.Send(std::move(event));
    if (stopped) Finish(arbor::v1::FINISH_REASON_STOP_STRING);
    return !stopped;
  }
  absl::StatusOr<NodeId> id = tree_.Commit(tree_step);
  if (!id.ok()) {
    Fail(id.status());
    return false;
  }
  return EmitCommitted(*id);
}

}  // namespace arbor::coordinator
