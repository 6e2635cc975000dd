#include "coordinator/job/beam_search.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "coordinator/job/stored_distribution.h"

namespace arbor::coordinator {

std::vector<BeamPick> SelectBeams(absl::Span<const BeamHypothesis> hypotheses, int width) {
  std::vector<BeamPick> all;
  std::vector<int> rank;  // Index in the hypothesis' top-K, for ties.
  for (int h = 0; h < static_cast<int>(hypotheses.size()); ++h) {
    const BeamHypothesis& hyp = hypotheses[h];
    if (hyp.next.empty()) {
      all.push_back({h, -1, 0.0f, hyp.cumulative_logprob});
      rank.push_back(0);
      continue;
    }
    // More than `width` tokens of one beam can never all survive.
    const int n = std::min<int>(width, static_cast<int>(hyp.next.size()));
    for (int i = 0; i < n; ++i) {
      const float logprob = std::min(hyp.next[i].logprob, 0.0f);
      all.push_back({h, hyp.next[i].token_id, logprob, hyp.cumulative_logprob + logprob});
      rank.push_back(i);
    }
  }
  std::vector<int> order(all.size());
  for (int i = 0; i < static_cast<int>(order.size()); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return std::make_tuple(-all[a].cumulative_logprob, all[a].hypothesis, rank[a]) <
           std::make_tuple(-all[b].cumulative_logprob, all[b].hypothesis, rank[b]);
  });
  std::vector<BeamPick> picks;
  for (int i = 0; i < static_cast<int>(order.size()) && i < width; ++i) {
    picks.push_back(all[order[i]]);
  }
  return picks;
}

bool IsCalm(const arbor::v1::Metrics& metrics, const entropix::BranchOptions& branch) {
  return metrics.entropy() < branch.calm_entropy && metrics.varentropy() < branch.calm_varentropy;
}

// --- the strategy ---------------------------------------------------------------------------

BeamSearch::BeamSearch(NodeId point, std::vector<Rollout> beams)
    : BranchStrategy(point, std::move(beams)) {
  for (const Rollout& beam : rollouts_) candidate_scores_.push_back(beam.score.Score());
}

BranchStrategy::Next BeamSearch::Send(BranchHost& host) {
  if (std::all_of(rollouts_.begin(), rollouts_.end(), [](const Rollout& b) { return b.done; })) {
    return Resolve();
  }
  arbor::v1::RunRequest request;
  std::vector<uint64_t> ids;
  PolicyBudgets budgets = host.Budgets();
  for (const Rollout& beam : rollouts_) {
    if (beam.done && beam.sent) continue;
    budgets.generated_before = host.tree().GeneratedTokenCount() + beam.score.tokens();
    // A finished beam not yet on the worker is only prepared (max_steps 0), so that the next
    // step's forks and truncations never depend on it.
    *request.add_items() = host.builder().RolloutItem(
        beam.sequence_id, beam.source, beam.done ? 0 : 1, beam.branch_id, /*branch_depth=*/1,
        /*stop_on_structural=*/false, budgets);
    ids.push_back(beam.sequence_id);
  }
  host.SendRun(std::move(request), std::move(ids));
  return std::optional<BranchCommit>();
}

BranchStrategy::Next BeamSearch::OnDone(BranchHost& host, const arbor::v1::RunResponse& response) {
  const std::vector<const arbor::v1::StepResult*> steps = TakeSteps(host, response);
  std::vector<BeamHypothesis> hypotheses;
  for (size_t b = 0; b < rollouts_.size(); ++b) {
    BeamHypothesis& h = hypotheses.emplace_back();
    h.cumulative_logprob = rollouts_[b].score.cumulative_logprob();
    if (steps[b] != nullptr) h.next = TopKOf(*steps[b]);
  }
  const std::vector<BeamPick> picks = SelectBeams(hypotheses, host.spec().policy.branch.width);
  // The pick that takes over a beam's own sequence: its sampled token (already on the worker),
  // else its best pick (truncate and append); further picks fork it.
  std::vector<int> owner(rollouts_.size(), -1);
  for (int p = 0; p < static_cast<int>(picks.size()); ++p) {
    const BeamPick& pick = picks[p];
    const arbor::v1::StepResult* step = steps[pick.hypothesis];
    if (owner[pick.hypothesis] < 0 || (step != nullptr && pick.token_id == step->token_id())) {
      owner[pick.hypothesis] = p;
    }
  }
  std::vector<Rollout> next;
  for (int p = 0; p < static_cast<int>(picks.size()); ++p) {
    ASSIGN_OR_RETURN(Rollout beam, Extend(host, picks[p], steps, owner[picks[p].hypothesis] == p));
    next.push_back(std::move(beam));
  }
  // Beams without a pick are dropped: pruned in the tree, released on the worker (no item of
  // the next step refers to them).
  std::vector<uint64_t> dropped;
  for (size_t b = 0; b < rollouts_.size(); ++b) {
    if (owner[b] >= 0) continue;
    RETURN_IF_ERROR(host.tree().PruneRollout(rollouts_[b].leaf).status());
    dropped.push_back(rollouts_[b].sequence_id);
  }
  host.Release(std::move(dropped));
  std::vector<bool> seen(candidate_scores_.size(), false);
  for (const Rollout& beam : next) {
    double& score = candidate_scores_[beam.candidate_index];
    if (!seen[beam.candidate_index] || beam.score.Score() > score) score = beam.score.Score();
    seen[beam.candidate_index] = true;
  }
  rollouts_ = std::move(next);
  return std::optional<BranchCommit>();
}

std::vector<const arbor::v1::StepResult*> BeamSearch::TakeSteps(
    BranchHost& host, const arbor::v1::RunResponse& response) {
  // Each beam's step, if it took one (results come in the order the beams were sent).
  std::vector<const arbor::v1::StepResult*> steps(rollouts_.size(), nullptr);
  int result = 0;
  for (size_t b = 0; b < rollouts_.size(); ++b) {
    Rollout& beam = rollouts_[b];
    if (beam.done && beam.sent) continue;
    const arbor::v1::RunResult& r = response.results(result++);
    beam.sent = true;
    beam.source = SequenceSource{};
    if (beam.done) continue;
    if (r.steps_size() != 1 || r.steps(0).token_id() < 0) {
      beam.done = true;  // Context or KV reached: the beam ends where it is.
      continue;
    }
    steps[b] = &r.steps(0);
    host.Count(steps[b]->strategy());
  }
  return steps;
}

absl::StatusOr<Rollout> BeamSearch::Extend(BranchHost& host, const BeamPick& pick,
                                           const std::vector<const arbor::v1::StepResult*>& steps,
                                           bool owns_sequence) const {
  const Rollout& parent = rollouts_[pick.hypothesis];
  if (pick.token_id < 0) return parent;  // Finished, and still among the best.
  const arbor::v1::StepResult& step = *steps[pick.hypothesis];
  const bool sampled = pick.token_id == step.token_id();
  Rollout beam = parent;
  beam.source = SequenceSource{};
  beam.sent = owns_sequence && sampled;
  if (owns_sequence) {
    if (!sampled) beam.source.truncate_to = step.position();
  } else {
    beam.sequence_id = host.NewSequenceId();
    beam.branch_id = host.NewBranchId();
    beam.source.fork_from = parent.sequence_id;
    beam.source.fork_length = step.position();
  }
  if (!beam.sent) beam.source.append = {pick.token_id};
  Step tree_step = TreeStep(step, beam.sequence_id);
  tree_step.token_id = pick.token_id;
  tree_step.logprob = pick.logprob;
  if (!sampled) tree_step.strategy = arbor::v1::STRATEGY_FORCED;  // Chosen by the search.
  ASSIGN_OR_RETURN(beam.leaf, host.tree().ExtendRollout(parent.leaf, tree_step));
  beam.token_id = pick.token_id;
  beam.score.Add(pick.logprob, step.metrics(), StepCertainty(step));
  const entropix::BranchOptions& branch = host.spec().policy.branch;
  beam.calm = IsCalm(step.metrics(), branch) ? parent.calm + 1 : 0;
  const int32_t max_len = std::min(branch.max_len, host.Remaining());
  beam.done = host.IsStopToken(pick.token_id) || beam.calm >= branch.calm_steps ||
              beam.score.tokens() >= max_len;
  return beam;
}

BranchCommit BeamSearch::Resolve() const {
  std::vector<double> scores;
  for (const Rollout& beam : rollouts_) scores.push_back(beam.score.Score());
  const Rollout& winner = rollouts_[BestIndex(scores)];
  BranchCommit commit;
  commit.winner_leaf = winner.leaf;
  commit.scores.assign(candidate_scores_.begin(), candidate_scores_.end());
  // The main path continues on the winner's sequence; a winner still to be forked continues on
  // the sequence it would fork from instead (that one is not touched since the last step).
  commit.main_sequence = winner.sequence_id;
  commit.source = winner.sent ? SequenceSource{} : winner.source;
  if (commit.source.fork_from) {
    commit.main_sequence = *commit.source.fork_from;
    commit.source.truncate_to = commit.source.fork_length;
    commit.source.fork_from.reset();
  }
  return commit;
}

}  // namespace arbor::coordinator
