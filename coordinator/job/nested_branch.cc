// ROLLOUT mode of BRANCH (docs/ARCHITECTURE.md §4.2) with nesting up to branch.max_depth. Part of
// class Job (job.h); split from job.cc by concept.
//
// Every rollout with work left, whatever its depth, runs in one batched Run per round. A rollout
// at depth d may branch again iff d < branch.max_depth: its Run then stops on structural
// decisions, and a BRANCH opens a nested branch at its leaf (its candidates are forked from its
// sequence in the next batched Run) with what is left of its length budget. INSERT and BACKSPACE
// stay fallback samples inside rollouts: they are structural edits of a path the job has not
// committed (and may prune), so the rollout's next Run takes that one position with structural
// stops off. A nested branch is resolved once all its rollouts are done: the best continues as
// the rollout it is nested in (which is then done too: its winner ended calm, on a stop token,
// or on the budget they share), the others are pruned and released. The outer branch resolves
// when all its rollouts are done, hence after every nested branch inside it.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/job/job.h"
#include "coordinator/job/stored_distribution.h"

namespace arbor::coordinator {
namespace {

using arbor::v1::StepResult;

template <typename Children>
std::vector<double> Scores(const Children& children) {
  std::vector<double> scores;
  for (const auto& child : children) scores.push_back(child.score.Score());
  return scores;
}

// Done, and on the worker (a rollout may win only once its sequence exists there).
template <typename Children>
bool AllFinished(const Children& children) {
  return std::all_of(children.begin(), children.end(),
                     [](const auto& child) { return child.done && child.sent; });
}

}  // namespace

std::vector<Job::Child*> Job::PendingRollouts() {
  std::vector<Child*> pending;
  // A rollout with a nested branch open waits for it; a finished one that is not on the worker
  // yet is only prepared (max_steps 0), since it may win. A held trace waits for the warm-up.
  ForEachRollout(branch_->children, [&pending](Child& child) {
    if (child.nested.empty() && !child.held && !(child.done && child.sent)) {
      pending.push_back(&child);
    }
  });
  return pending;
}

void Job::SendRollout() {
  const int32_t prompt = static_cast<int32_t>(spec_.prompt_token_ids.size());
  PolicyBudgets budgets = Budgets();
  arbor::v1::RunRequest request;
  std::vector<uint64_t> ids;
  for (Child* child : PendingRollouts()) {
    const int32_t left = child->done ? 0 : child->max_len - child->score.tokens();
    const bool fallback = child->structural_off_once;
    budgets.generated_before = tree_.node(child->leaf).position + 1 - prompt;
    const bool may_branch =
        !fallback && child->depth < spec_.policy.MaxForkDepth() && ForkWidth(/*replaced=*/1) >= 2;
    arbor::v1::RunItem& item = *request.add_items();
    item = builder_.RolloutItem(child->sequence_id, child->source,
                                fallback ? std::min(1, left) : left, child->branch_id,
                                child->depth, may_branch, budgets);
    SetConfidenceStop(*child, item);
    ids.push_back(child->sequence_id);
  }
  SendRun(std::move(request), std::move(ids));
}

void Job::OnRolloutDone(const arbor::v1::RunResponse& response) {
  const std::vector<Child*> rollouts = PendingRollouts();
  for (size_t i = 0; i < rollouts.size(); ++i) {
    if (!RecordRollout(*rollouts[i], response.results(static_cast<int>(i)))) return;
  }
  if (trace()) return ResolveTraces();
  for (Child& child : branch_->children) {
    if (!ResolveNested(child)) return;
  }
  if (!AllFinished(branch_->children)) return Continue();
  const std::vector<double> scores = Scores(branch_->children);
  const int best = BestIndex(scores);
  const Child& winner = branch_->children[best];
  CommitBranch(best, std::vector<float>(scores.begin(), scores.end()), /*reason=*/"",
               winner.sequence_id, SequenceSource{}, winner.stop);
}

bool Job::RecordRollout(Child& child, const arbor::v1::RunResult& result) {
  child.source = SequenceSource{};
  child.sent = true;
  child.structural_off_once = false;
  child.stop = result.stop_reason();
  const StepResult* structural = nullptr;
  for (const StepResult& step : result.steps()) {
    if (step.token_id() < 0) {
      structural = &step;
      break;
    }
    Count(step.strategy());
    absl::StatusOr<NodeId> leaf =
        tree_.ExtendRollout(child.leaf, TreeStep(step, child.sequence_id));
    if (!leaf.ok()) {
      Fail(leaf.status());
      return false;
    }
    child.leaf = *leaf;
    child.score.Add(step.logprob(), step.metrics(), StepCertainty(step));
  }
  if (child.stop != arbor::v1::STOP_REASON_STRUCTURAL) {
    child.done = child.done || child.stop != arbor::v1::STOP_REASON_MAX_STEPS ||
                 child.score.tokens() >= child.max_len;
    return true;
  }
  if (structural == nullptr || structural->position() != tree_.node(child.leaf).position + 1) {
    Fail(absl::InternalError(absl::StrCat("rollout of sequence ", child.sequence_id,
                                          " stopped without a structural step at its leaf")));
    return false;
  }
  // TRACE: the rollout itself becomes one of the nested traces; with no room for another, it
  // stays greedy (the fallback).
  const int width = ForkWidth(/*replaced=*/1);
  if (structural->strategy() == arbor::v1::STRATEGY_BRANCH &&
      child.depth < spec_.policy.MaxForkDepth() && width >= 2) {
    SequenceSource base;
    base.fork_from = child.sequence_id;
    base.fork_length = structural->position();
    absl::StatusOr<std::vector<Child>> nested =
        ForkCandidates(child.leaf, *structural, child.branch_id, base, child.depth + 1,
                       child.max_len - child.score.tokens(), width);
    if (!nested.ok()) {
      Fail(nested.status());
      return false;
    }
    child.nested = *std::move(nested);
    if (!child.nested.empty()) traces_ += static_cast<int32_t>(child.nested.size()) - 1;
  }
  child.structural_off_once = child.nested.empty();
  return true;
}

bool Job::ResolveNested(Child& child) {
  if (child.nested.empty()) return true;
  for (Child& nested : child.nested) {
    if (!ResolveNested(nested)) return false;
  }
  if (!AllFinished(child.nested)) return true;
  const std::vector<double> scores = Scores(child.nested);
  return AdoptNestedWinner(child, BestIndex(scores),
                           std::vector<float>(scores.begin(), scores.end()),
                           /*reason=*/"");
}

bool Job::AdoptNestedWinner(Child& child, int winner_index, const std::vector<float>& scores,
                            const std::string& reason) {
  Child winner = std::move(child.nested[winner_index]);
  absl::StatusOr<BranchResolution> resolution =
      tree_.ResolveBranch(child.leaf, winner.leaf, scores);
  if (!resolution.ok()) {
    Fail(resolution.status());
    return false;
  }
  std::vector<uint64_t> released = {child.sequence_id};
  for (const Child& loser : child.nested) {
    if (loser.sequence_id != winner.sequence_id) released.push_back(loser.sequence_id);
  }
  Release(std::move(released));
  EmitResolved(*resolution, scores, reason);
  child.nested.clear();
  child.sequence_id = winner.sequence_id;
  child.leaf = winner.leaf;
  child.token_id = winner.token_id;
  child.score.Append(winner.score);
  child.source = std::move(winner.source);
  child.sent = winner.sent;
  child.stop = winner.stop;
  child.done = true;
  return true;
}

}  // namespace arbor::coordinator
