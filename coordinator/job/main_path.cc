#include "coordinator/job/main_path.h"

#include <algorithm>
#include <ranges>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/job/backspace.h"
#include "coordinator/job/stored_distribution.h"

namespace arbor::coordinator {
namespace {

using arbor::v1::StepResult;

// Logprob of a token the coordinator appends without drawing it (INSERT): from the structural
// step's top-K when present, else the K-th logprob, an upper bound of the true value.
float LogprobOf(const StepResult& step, int32_t token) {
  float lowest = 0.0f;
  for (const arbor::v1::TokenLogprob& t : step.top_k()) {
    if (t.token_id() == token) return t.logprob();
    lowest = std::min(lowest, t.logprob());
  }
  return lowest;
}

}  // namespace

MainPath::MainPath(Parts parts, uint64_t main_sequence, std::unique_ptr<BranchPlanner> planner)
    : parts_(std::move(parts)),
      main_(main_sequence, parts_.spec->prompt_token_ids),
      planner_(std::move(planner)),
      host_({parts_.spec, parts_.tree, parts_.builder, planner_.get(), parts_.output, &used_,
             parts_.next_sequence_id, parts_.decode,
             [control = parts_.control](arbor::v1::RunRequest request, std::vector<uint64_t> ids) {
               control->SendRun(std::move(request), std::move(ids));
             },
             [control = parts_.control](std::vector<uint64_t> ids) {
               control->Release(std::move(ids));
             }}) {}

// --- the main sequence's Runs -------------------------------------------------------------

void MainPath::Send() {
  if (!branch_) return SendMainRun();
  SendBranch();
}

void MainPath::SendMainRun() {
  const JobSpec& spec = *parts_.spec;
  const JobOptions& options = *parts_.options;
  if (host_.Remaining() <= 0) return parts_.control->Finish(arbor::v1::FINISH_REASON_MAX_TOKENS);
  if (parts_.tree->NextPosition() >= spec.max_context) {
    return parts_.control->Finish(arbor::v1::FINISH_REASON_CONTEXT);
  }
  const bool search = spec.policy.mode == entropix::PolicyMode::kSearch ||
                      spec.policy.mode == entropix::PolicyMode::kTrace;
  const int32_t ramp = options.stream_runs
                           ? options.steps_per_run
                           : std::max(options.first_run_steps, parts_.tree->GeneratedTokenCount());
  const int32_t max_steps =
      main_.structural_off_once() ? 1 : std::min({ramp, options.steps_per_run, host_.Remaining()});
  arbor::v1::RunRequest request;
  arbor::v1::RunItem& item = *request.add_items();
  item = parts_.builder->MainItem(main_.id(), main_.source(), max_steps,
                                  search && !main_.structural_off_once(), host_.Budgets());
  if (planner_->branching_off()) item.set_branch_depth(spec.policy.MaxForkDepth());
  main_.RunSent();
  parts_.control->SendRun(std::move(request), {main_.id()});
}

absl::Status MainPath::OnDone(const arbor::v1::RunResponse& response) {
  if (!branch_) return OnMainDone(response.results(0));
  OnBranchDone(response);
  return absl::OkStatus();
}

absl::Status MainPath::OnMainDone(const arbor::v1::RunResult& result) {
  if (main_.RanOnce()) parts_.output->AddCachedPromptTokens(result.cached_tokens());
  const StepResult* structural = nullptr;
  // The run's leading steps already came as progress and are in the tree.
  const int recorded = main_.TakeStepsRecorded();
  for (const StepResult& step : result.steps() | std::views::drop(recorded)) {
    if (step.token_id() < 0) {
      structural = &step;
      break;
    }
    if (!RecordMainStep(step)) return absl::OkStatus();
  }
  JobControl& control = *parts_.control;
  switch (result.stop_reason()) {
    case arbor::v1::STOP_REASON_STRUCTURAL:
      if (structural == nullptr) {
        control.Fail(absl::InternalError("structural stop without a structural step"));
      } else {
        ApplyStructural(*structural);
      }
      break;
    case arbor::v1::STOP_REASON_STOP_TOKEN:
      control.Finish(arbor::v1::FINISH_REASON_STOP_TOKEN);
      break;
    case arbor::v1::STOP_REASON_CONTEXT:
      control.Finish(arbor::v1::FINISH_REASON_CONTEXT);
      break;
    case arbor::v1::STOP_REASON_KV_EXHAUSTED:
      return absl::ResourceExhaustedError("worker KV exhausted mid-run");
    case arbor::v1::STOP_REASON_CANCELLED:
      return absl::UnavailableError("worker cancelled the run");
    default:  // MAX_STEPS (CALM only applies to rollouts).
      control.Continue();
  }
  return absl::OkStatus();
}

void MainPath::OnProgress(const arbor::v1::RunProgress& progress) {
  // A branch's rollouts are recorded when their Run answers; until then their text goes to the
  // client as the traces' text.
  if (branch_) {
    ShowTraces(progress.results());
  } else if (progress.results_size() == 1) {
    for (const StepResult& step : progress.results(0).steps()) {
      if (step.token_id() < 0 || !RecordMainStep(step)) break;
      main_.StepRecorded();
    }
  }
}

bool MainPath::RecordMainStep(const StepResult& step) {
  SearchTree& tree = *parts_.tree;
  JobOutput& output = *parts_.output;
  if (step.position() != tree.NextPosition()) {
    parts_.control->Fail(absl::InternalError(absl::StrCat(
        "worker step at position ", step.position(), ", expected ", tree.NextPosition())));
    return false;
  }
  output.Count(step.strategy());
  planner_->OnMainStep(step);
  const Step tree_step = TreeStep(step, main_.id());
  if (step.strategy() == arbor::v1::STRATEGY_INSERT) {
    // CANONICAL: the worker appended the thinking token itself.
    absl::StatusOr<NodeId> id = tree.Insert(tree_step);
    if (!id.ok()) {
      parts_.control->Fail(id.status());
      return false;
    }
    ++used_.inserts_used;
    used_.last_insert_position = step.position();
    arbor::v1::GenerateEvent event;
    event.mutable_insert()->add_node_ids(*id);
    event.mutable_insert()->add_token_ids(step.token_id());
    event.mutable_insert()->add_logprobs(tree_step.logprob);
    const bool stopped = output.PushText(tree, *id, event.mutable_insert()->mutable_text());
    output.Send(std::move(event));
    if (stopped) parts_.control->Finish(arbor::v1::FINISH_REASON_STOP_STRING);
    return !stopped;
  }
  absl::StatusOr<NodeId> id = tree.Commit(tree_step);
  if (!id.ok()) {
    parts_.control->Fail(id.status());
    return false;
  }
  return EmitCommitted(*id);
}

bool MainPath::EmitCommitted(NodeId id) {
  const JobSpec& spec = *parts_.spec;
  const bool final = spec.policy.mode != entropix::PolicyMode::kSearch ||
                     used_.backspaces_used >= spec.policy.backspace.max_per_job;
  if (!parts_.output->SendToken(*parts_.tree, id, final)) return true;
  parts_.control->Finish(arbor::v1::FINISH_REASON_STOP_STRING);
  return false;
}

// --- structural decisions -------------------------------------------------------------------

void MainPath::ApplyStructural(const StepResult& step) {
  if (step.position() != parts_.tree->NextPosition()) {
    return parts_.control->Fail(absl::InternalError("structural step off the committed path"));
  }
  switch (step.strategy()) {
    case arbor::v1::STRATEGY_INSERT:
      return ApplyInsert(step);
    case arbor::v1::STRATEGY_BACKSPACE:
      return ApplyBackspace(step);
    case arbor::v1::STRATEGY_BRANCH:
      return OpenBranch(step);
    default:
      return parts_.control->Fail(absl::InternalError(absl::StrCat(
          "structural stop with strategy ", arbor::v1::Strategy_Name(step.strategy()))));
  }
}

void MainPath::ApplyInsert(const StepResult& step) {
  SearchTree& tree = *parts_.tree;
  JobOutput& output = *parts_.output;
  const std::vector<int32_t>& tokens = parts_.spec->policy.insert.tokens;
  const size_t n = std::min<size_t>(tokens.size(), std::max(0, host_.Remaining()));
  if (n == 0) return parts_.control->Finish(arbor::v1::FINISH_REASON_MAX_TOKENS);
  output.Count(step.strategy());
  arbor::v1::GenerateEvent event;
  bool stopped = false;
  for (size_t i = 0; i < n; ++i) {
    Step tree_step = TreeStep(step, main_.id());
    tree_step.token_id = tokens[i];
    tree_step.logprob = LogprobOf(step, tokens[i]);
    if (i > 0) tree_step.top_logprobs.clear();  // Only the first was decided on this step.
    absl::StatusOr<NodeId> id = tree.Insert(tree_step);
    if (!id.ok()) return parts_.control->Fail(id.status());
    event.mutable_insert()->add_node_ids(*id);
    event.mutable_insert()->add_token_ids(tokens[i]);
    event.mutable_insert()->add_logprobs(tree_step.logprob);
    main_.Append(tokens[i]);
    stopped = stopped || output.PushText(tree, *id, event.mutable_insert()->mutable_text());
  }
  ++used_.inserts_used;
  used_.last_insert_position = tree.node(tree.tail()).position;
  output.Send(std::move(event));
  if (stopped) return parts_.control->Finish(arbor::v1::FINISH_REASON_STOP_STRING);
  parts_.control->Continue();
}

void MainPath::ApplyBackspace(const StepResult& step) {
  SearchTree& tree = *parts_.tree;
  const NodeId tail = tree.tail();
  const Node removed = tree.node(tail);
  if (removed.status != arbor::v1::NODE_STATUS_COMMITTED || tree.WasBackspaced(removed.position)) {
    return Fallback();
  }
  const entropix::RngKey key{parts_.spec->seed, static_cast<uint32_t>(removed.position), 0, 0};
  absl::StatusOr<entropix::SampledToken> redraw =
      RedrawBackspaced(tree.TopLogprobs(tail), removed.token_id, step, key);
  if (!redraw.ok()) return Fallback();
  const std::vector<TokenAlternative> stored(tree.TopLogprobs(tail).begin(),
                                             tree.TopLogprobs(tail).end());
  if (!tree.Backspace().ok()) return Fallback();
  parts_.output->Count(step.strategy());
  ++used_.backspaces_used;
  arbor::v1::TokenBan& ban = used_.bans.emplace_back();
  ban.set_position(removed.position);
  ban.set_token_id(removed.token_id);
  arbor::v1::GenerateEvent event;
  event.mutable_backspace()->set_removed_node_id(tail);
  event.mutable_backspace()->set_removed_token_id(removed.token_id);
  event.mutable_backspace()->set_position(removed.position);
  parts_.output->Send(std::move(event));
  parts_.output->PopText();  // The client drops the piece streamed with the removed token.

  Step redrawn;
  redrawn.token_id = redraw->id;
  redrawn.logprob = std::min(redraw->logprob, 0.0f);
  redrawn.metrics = removed.metrics;  // Drawn from the removed token's distribution.
  redrawn.strategy = arbor::v1::STRATEGY_RESAMPLE;
  redrawn.sequence_id = main_.id();
  redrawn.top_logprobs = stored;
  absl::StatusOr<NodeId> id = tree.Commit(redrawn);
  if (!id.ok()) return parts_.control->Fail(id.status());
  main_.Redraw(removed.position, redraw->id);
  if (!EmitCommitted(*id)) return;
  if (parts_.spec->IsStopToken(redraw->id)) {
    return parts_.control->Finish(arbor::v1::FINISH_REASON_STOP_TOKEN);
  }
  parts_.control->Continue();
}

void MainPath::OpenBranch(const StepResult& step) {
  SearchTree& tree = *parts_.tree;
  SequenceSource base;
  if (main_.live()) {
    base.fork_from = main_.id();
    base.fork_length = step.position();
  } else {
    base.is_new = true;  // After a re-home: prefill the committed path.
    base.append = tree.SequenceTokenIds();
  }
  const ForkPlan plan = planner_->Plan(host_.Remaining());
  if (plan.width < 1) return Fallback();
  absl::StatusOr<std::vector<Rollout>> rollouts =
      host_.Fork(tree.tail(), step, /*rng_branch=*/0, base,
                 /*depth=*/1, plan.max_len, plan.width);
  if (!rollouts.ok()) return parts_.control->Fail(rollouts.status());
  if (rollouts->empty()) return Fallback();
  branch_ = planner_->Open(tree.tail(), *std::move(rollouts));
  parts_.control->Continue();
}

void MainPath::Fallback() {
  main_.SkipStructuralOnce();
  parts_.control->Continue();
}

// --- the open branch --------------------------------------------------------------------------

void MainPath::SendBranch() {
  BranchStrategy::Next sent = branch_->Send(host_);
  if (!sent.ok()) return parts_.control->Fail(sent.status());
  if (*sent) CommitBranch(**std::move(sent));
}

void MainPath::OnBranchDone(const arbor::v1::RunResponse& response) {
  ShowTraces(response.results());  // Before the strategy ends any of them.
  BranchStrategy::Next next = branch_->OnDone(host_, response);
  if (!next.ok()) return parts_.control->Fail(next.status());
  if (*next) return CommitBranch(**std::move(next));
  parts_.control->Continue();
}

void MainPath::CommitBranch(BranchCommit commit) {
  SearchTree& tree = *parts_.tree;
  absl::StatusOr<BranchResolution> resolution =
      tree.ResolveBranch(branch_->point(), commit.winner_leaf, commit.scores);
  if (!resolution.ok()) return parts_.control->Fail(resolution.status());
  std::vector<uint64_t> released;
  for (uint64_t id : branch_->Sequences()) {
    if (id != commit.main_sequence) released.push_back(id);
  }
  if (main_.live() && main_.id() != commit.main_sequence) released.push_back(main_.id());
  parts_.control->Release(std::move(released));
  main_.Adopt(commit.main_sequence, std::move(commit.source));
  branch_.reset();
  parts_.output->reasoning().EndAll();
  parts_.output->SendResolved(*resolution, commit.scores, commit.reason);
  for (NodeId id : resolution->committed_nodes) {
    if (!EmitCommitted(id)) return;
  }
  if (parts_.spec->IsStopToken(tree.node(tree.tail()).token_id)) {
    return parts_.control->Finish(arbor::v1::FINISH_REASON_STOP_TOKEN);
  }
  if (commit.stop == arbor::v1::STOP_REASON_CONTEXT) {
    return parts_.control->Finish(arbor::v1::FINISH_REASON_CONTEXT);
  }
  parts_.control->Continue();
}

void MainPath::ShowTraces(const google::protobuf::RepeatedPtrField<arbor::v1::RunResult>& results) {
  for (const arbor::v1::RunResult& result : results) {
    for (const StepResult& step : result.steps()) {
      if (step.token_id() < 0) break;
      parts_.output->reasoning().Extend(result.sequence_id(), step.position(), step.token_id());
    }
  }
}

void MainPath::ShrinkSearch(const absl::Status& status) {
  absl::StatusOr<BranchResolution> abandoned = parts_.tree->AbandonBranch(branch_->point());
  if (!abandoned.ok()) return parts_.control->Fail(abandoned.status());
  std::vector<uint64_t> released;
  for (uint64_t id : branch_->Sequences()) {
    if (id != main_.id()) released.push_back(id);
  }
  parts_.control->Release(std::move(released));
  branch_.reset();
  const int width = static_cast<int>(abandoned->candidates.size());
  const int cap = planner_->Shrink(width);
  const std::string reason =
      absl::StrCat("abandoned: the worker's KV cache cannot hold ", width, " rollouts (",
                   status.message(), "); ",
                   cap >= 2 ? absl::StrCat("later forks take at most ", cap)
                            : std::string("the job goes on without branching"));
  parts_.output->SendResolved(*abandoned, {}, reason);
  base::WithFields(parts_.control->LogFieldsFor("search_shrunk", {{"fork_width_cap", cap}}))
      .Warn("branch {}", reason);
  Fallback();
}

// --- the sequences on the worker ----------------------------------------------------------------

std::vector<uint64_t> MainPath::EndSequences() {
  std::vector<uint64_t> live = LiveSequences();
  main_.Released();
  return live;
}

void MainPath::ResetSequences() {
  parts_.control->Release(LiveSequences());
  main_.Reset(parts_.tree->SequenceTokenIds());
  if (branch_) branch_->Reprefill(*parts_.tree);
}

std::vector<uint64_t> MainPath::LiveSequences() const {
  std::vector<uint64_t> live;
  if (main_.live()) live.push_back(main_.id());
  if (branch_) {
    const std::vector<uint64_t> branch = branch_->Sequences();
    live.insert(live.end(), branch.begin(), branch.end());
  }
  return live;
}

}  // namespace arbor::coordinator
