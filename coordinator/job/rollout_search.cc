#include "coordinator/job/rollout_search.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "coordinator/job/stored_distribution.h"

namespace arbor::coordinator {
namespace {

using arbor::v1::StepResult;

std::vector<double> Scores(const std::vector<Rollout>& rollouts) {
  std::vector<double> scores;
  for (const Rollout& rollout : rollouts) scores.push_back(rollout.score.Score());
  return scores;
}

// Done, and on the worker (a rollout may win only once its sequence exists there).
bool AllFinished(const std::vector<Rollout>& rollouts) {
  return std::all_of(rollouts.begin(), rollouts.end(),
                     [](const Rollout& rollout) { return rollout.done && rollout.sent; });
}

}  // namespace

RolloutSearch::RolloutSearch(NodeId point, std::vector<Rollout> rollouts)
    : BranchStrategy(point, std::move(rollouts)), leaves_(static_cast<int32_t>(rollouts_.size())) {}

int RolloutSearch::ForkWidth(const entropix::PolicyConfig& policy, int32_t replaced) const {
  return policy.ForkWidth();
}

std::vector<Rollout*> RolloutSearch::Pending() {
  std::vector<Rollout*> pending;
  // A rollout with a nested branch open waits for it; a finished one that is not on the worker
  // yet is only prepared (max_steps 0), since it may win. A held trace waits for the warm-up.
  ForEachRollout(rollouts_, [&pending](Rollout& rollout) {
    if (rollout.nested.empty() && !rollout.held && !(rollout.done && rollout.sent)) {
      pending.push_back(&rollout);
    }
  });
  return pending;
}

BranchStrategy::Next RolloutSearch::Send(BranchHost& host) {
  const entropix::PolicyConfig& policy = host.spec().policy;
  const int32_t prompt = static_cast<int32_t>(host.spec().prompt_token_ids.size());
  PolicyBudgets budgets = host.Budgets();
  arbor::v1::RunRequest request;
  std::vector<uint64_t> ids;
  for (Rollout* rollout : Pending()) {
    const int32_t left = rollout->done ? 0 : rollout->max_len - rollout->score.tokens();
    const bool fallback = rollout->structural_off_once;
    budgets.generated_before = host.tree().node(rollout->leaf).position + 1 - prompt;
    const bool may_branch = !fallback && rollout->depth < policy.MaxForkDepth() &&
                            ForkWidth(policy, /*replaced=*/1) >= 2;
    arbor::v1::RunItem& item = *request.add_items();
    item = host.builder().RolloutItem(rollout->sequence_id, rollout->source,
                                      fallback ? std::min(1, left) : StepLimit(*rollout, left),
                                      rollout->branch_id, rollout->depth, may_branch, budgets);
    AddEarlyStop(*rollout, item);
    ids.push_back(rollout->sequence_id);
  }
  host.SendRun(std::move(request), std::move(ids));
  return std::optional<BranchCommit>();
}

BranchStrategy::Next RolloutSearch::OnDone(BranchHost& host,
                                           const arbor::v1::RunResponse& response) {
  const std::vector<Rollout*> pending = Pending();
  for (size_t i = 0; i < pending.size(); ++i) {
    RETURN_IF_ERROR(Record(host, *pending[i], response.results(static_cast<int>(i))));
  }
  return Resolve(host);
}

BranchStrategy::Next RolloutSearch::Resolve(BranchHost& host) {
  for (Rollout& rollout : rollouts_) RETURN_IF_ERROR(ResolveNested(host, rollout));
  if (!AllFinished(rollouts_)) return std::optional<BranchCommit>();
  const std::vector<double> scores = Scores(rollouts_);
  const Rollout& winner = rollouts_[BestIndex(scores)];
  BranchCommit commit;
  commit.winner_leaf = winner.leaf;
  commit.scores.assign(scores.begin(), scores.end());
  commit.main_sequence = winner.sequence_id;
  commit.stop = winner.stop;
  return commit;
}

absl::Status RolloutSearch::Record(BranchHost& host, Rollout& rollout,
                                   const arbor::v1::RunResult& result) {
  SearchTree& tree = host.tree();
  rollout.source = SequenceSource{};
  rollout.sent = true;
  rollout.structural_off_once = false;
  rollout.stop = result.stop_reason();
  const StepResult* structural = nullptr;
  for (const StepResult& step : result.steps()) {
    if (step.token_id() < 0) {
      structural = &step;
      break;
    }
    host.Count(step.strategy());
    ASSIGN_OR_RETURN(rollout.leaf,
                     tree.ExtendRollout(rollout.leaf, TreeStep(step, rollout.sequence_id)));
    rollout.score.Add(step.logprob(), step.metrics(), StepCertainty(step));
  }
  if (rollout.stop != arbor::v1::STOP_REASON_STRUCTURAL) {
    rollout.done = rollout.done || rollout.stop != arbor::v1::STOP_REASON_MAX_STEPS ||
                   rollout.score.tokens() >= rollout.max_len;
    if (rollout.done) host.EndTrace(rollout.sequence_id);
    return absl::OkStatus();
  }
  if (structural == nullptr || structural->position() != tree.node(rollout.leaf).position + 1) {
    return absl::InternalError(absl::StrCat("rollout of sequence ", rollout.sequence_id,
                                            " stopped without a structural step at its leaf"));
  }
  // The rollout itself becomes one of the nested rollouts; with no room for another (TRACE's
  // budget), it takes the fallback.
  const entropix::PolicyConfig& policy = host.spec().policy;
  const int width = ForkWidth(policy, /*replaced=*/1);
  if (structural->strategy() == arbor::v1::STRATEGY_BRANCH &&
      rollout.depth < policy.MaxForkDepth() && width >= 2) {
    SequenceSource base;
    base.fork_from = rollout.sequence_id;
    base.fork_length = structural->position();
    ASSIGN_OR_RETURN(rollout.nested,
                     host.Fork(rollout.leaf, *structural, rollout.branch_id, base,
                               rollout.depth + 1, rollout.max_len - rollout.score.tokens(), width));
    if (!rollout.nested.empty()) {
      leaves_ += static_cast<int32_t>(rollout.nested.size()) - 1;
      host.EndTrace(rollout.sequence_id);  // It goes on in its nested rollouts.
    }
  }
  rollout.structural_off_once = rollout.nested.empty();
  return absl::OkStatus();
}

absl::Status RolloutSearch::ResolveNested(BranchHost& host, Rollout& rollout) {
  if (rollout.nested.empty()) return absl::OkStatus();
  for (Rollout& nested : rollout.nested) RETURN_IF_ERROR(ResolveNested(host, nested));
  if (!AllFinished(rollout.nested)) return absl::OkStatus();
  const std::vector<double> scores = Scores(rollout.nested);
  return AdoptNestedWinner(host, rollout, BestIndex(scores),
                           std::vector<float>(scores.begin(), scores.end()), /*reason=*/"");
}

absl::Status RolloutSearch::AdoptNestedWinner(BranchHost& host, Rollout& parent, int winner_index,
                                              const std::vector<float>& scores,
                                              const std::string& reason) {
  Rollout winner = std::move(parent.nested[winner_index]);
  ASSIGN_OR_RETURN(BranchResolution resolution,
                   host.tree().ResolveBranch(parent.leaf, winner.leaf, scores));
  std::vector<uint64_t> released = {parent.sequence_id};
  for (const Rollout& loser : parent.nested) {
    if (loser.sequence_id != winner.sequence_id) released.push_back(loser.sequence_id);
  }
  host.Release(std::move(released));
  host.EmitResolved(resolution, scores, reason);
  parent.nested.clear();
  parent.sequence_id = winner.sequence_id;
  parent.leaf = winner.leaf;
  parent.token_id = winner.token_id;
  parent.score.Append(winner.score);
  parent.source = std::move(winner.source);
  parent.sent = winner.sent;
  parent.stop = winner.stop;
  parent.done = true;
  return absl::OkStatus();
}

}  // namespace arbor::coordinator
