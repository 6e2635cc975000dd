#include "coordinator/job/beam_search.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "coordinator/job/job.h"
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

// --- the job's beam steps (mu_ held) ----------------------------------------------------------

void Job::SendBeamStep() {
  const std::vector<Child>& beams = branch_->children;
  if (std::all_of(beams.begin(), beams.end(), [](const Child& b) { return b.done; })) {
    return ResolveBeams();
  }
  arbor::v1::RunRequest request;
  std::vector<uint64_t> ids;
  PolicyBudgets budgets = Budgets();
  for (const Child& beam : beams) {
    if (beam.done && beam.sent) continue;
    budgets.generated_before = tree_.GeneratedTokenCount() + beam.score.tokens();
    // A finished beam not yet on the worker is only prepared (max_steps 0), so that the next
    // step's forks and truncations never depend on it.
    // Beams never nest (branch.max_depth > 1 applies to ROLLOUT): every beam step re-ranks all
    // of them, so a nested branch would have to join the ranking of its outer one.
    *request.add_items() = builder_.RolloutItem(beam.sequence_id, beam.source, beam.done ? 0 : 1,
                                                beam.branch_id, /*branch_depth=*/1,
                                                /*stop_on_structural=*/false, budgets);
    ids.push_back(beam.sequence_id);
  }
  SendRun(std::move(request), std::move(ids));
}

void Job::OnBeamStepDone(const arbor::v1::RunResponse& response) {
  std::vector<Child>& beams = branch_->children;
  const std::vector<const arbor::v1::StepResult*> steps = TakeBeamSteps(response);
  std::vector<BeamHypothesis> hypotheses;
  for (size_t b = 0; b < beams.size(); ++b) {
    BeamHypothesis& h = hypotheses.emplace_back();
    h.cumulative_logprob = beams[b].score.cumulative_logprob();
    if (steps[b] != nullptr) h.next = TopKOf(*steps[b]);
  }
  const std::vector<BeamPick> picks = SelectBeams(hypotheses, spec_.policy.branch.width);
  // The pick that takes over a beam's own sequence: its sampled token (already on the worker),
  // else its best pick (truncate and append); further picks fork it.
  std::vector<int> owner(beams.size(), -1);
  for (int p = 0; p < static_cast<int>(picks.size()); ++p) {
    const BeamPick& pick = picks[p];
    const arbor::v1::StepResult* step = steps[pick.hypothesis];
    if (owner[pick.hypothesis] < 0 || (step != nullptr && pick.token_id == step->token_id())) {
      owner[pick.hypothesis] = p;
    }
  }
  std::vector<Child> next;
  for (int p = 0; p < static_cast<int>(picks.size()); ++p) {
    absl::StatusOr<Child> beam = ExtendBeam(picks[p], steps, owner[picks[p].hypothesis] == p);
    if (!beam.ok()) return Fail(beam.status());
    next.push_back(*std::move(beam));
  }
  // Beams without a pick are dropped: pruned in the tree, released on the worker (no item of
  // the next step refers to them).
  std::vector<uint64_t> dropped;
  for (size_t b = 0; b < beams.size(); ++b) {
    if (owner[b] >= 0) continue;
    absl::StatusOr<PruneResult> pruned = tree_.PruneRollout(beams[b].leaf);
    if (!pruned.ok()) return Fail(pruned.status());
    dropped.push_back(beams[b].sequence_id);
  }
  Release(std::move(dropped));
  std::vector<double>& scores = branch_->beam_scores;
  std::vector<bool> seen(scores.size(), false);
  for (const Child& beam : next) {
    double& score = scores[beam.candidate_index];
    if (!seen[beam.candidate_index] || beam.score.Score() > score) score = beam.score.Score();
    seen[beam.candidate_index] = true;
  }
  beams = std::move(next);
  Continue();
}

std::vector<const arbor::v1::StepResult*> Job::TakeBeamSteps(
    const arbor::v1::RunResponse& response) {
  std::vector<Child>& beams = branch_->children;
  // Each beam's step, if it took one (results come in the order the beams were sent).
  std::vector<const arbor::v1::StepResult*> steps(beams.size(), nullptr);
  int result = 0;
  for (size_t b = 0; b < beams.size(); ++b) {
    Child& beam = beams[b];
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
    Count(steps[b]->strategy());
  }
  return steps;
}

absl::StatusOr<Job::Child> Job::ExtendBeam(const BeamPick& pick,
                                           const std::vector<const arbor::v1::StepResult*>& steps,
                                           bool owns_sequence) {
  const Child& parent = branch_->children[pick.hypothesis];
  if (pick.token_id < 0) return parent;  // Finished, and still among the best.
  const arbor::v1::StepResult& step = *steps[pick.hypothesis];
  const bool sampled = pick.token_id == step.token_id();
  Child beam = parent;
  beam.source = SequenceSource{};
  beam.sent = owns_sequence && sampled;
  if (owns_sequence) {
    if (!sampled) beam.source.truncate_to = step.position();
  } else {
    beam.sequence_id = env_.next_sequence_id();
    beam.branch_id = next_branch_id_++;
    beam.source.fork_from = parent.sequence_id;
    beam.source.fork_length = step.position();
  }
  if (!beam.sent) beam.source.append = {pick.token_id};
  Step tree_step = TreeStep(step, beam.sequence_id);
  tree_step.token_id = pick.token_id;
  tree_step.logprob = pick.logprob;
  if (!sampled) tree_step.strategy = arbor::v1::STRATEGY_FORCED;  // Chosen by the search.
  ASSIGN_OR_RETURN(beam.leaf, tree_.ExtendRollout(parent.leaf, tree_step));
  beam.token_id = pick.token_id;
  beam.score.Add(pick.logprob, step.metrics(), StepCertainty(step));
  beam.calm = IsCalm(step.metrics(), spec_.policy.branch) ? parent.calm + 1 : 0;
  const int32_t max_len = std::min(spec_.policy.branch.max_len, Remaining());
  beam.done = IsStopToken(pick.token_id) || beam.calm >= spec_.policy.branch.calm_steps ||
              beam.score.tokens() >= max_len;
  return beam;
}

void Job::ResolveBeams() {
  const std::vector<Child>& beams = branch_->children;
  std::vector<double> scores;
  for (const Child& beam : beams) scores.push_back(beam.score.Score());
  const Child& winner = beams[BestIndex(scores)];
  // The main path continues on the winner's sequence; a winner still to be forked continues on
  // the sequence it would fork from instead (that one is not touched since the last step).
  uint64_t main_sequence = winner.sequence_id;
  SequenceSource source = winner.sent ? SequenceSource{} : winner.source;
  if (source.fork_from) {
    main_sequence = *source.fork_from;
    source.truncate_to = source.fork_length;
    source.fork_from.reset();
  }
  const std::vector<float> candidate_scores(branch_->beam_scores.begin(),
                                            branch_->beam_scores.end());
  CommitBranch(BestIndex(scores), candidate_scores, /*reason=*/"", main_sequence, std::move(source),
               arbor::v1::STOP_REASON_UNSPECIFIED);
}

}  // namespace arbor::coordinator
