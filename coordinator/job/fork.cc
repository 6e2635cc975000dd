#include "coordinator/job/fork.h"

#include <algorithm>
#include <utility>

#include "base/status_macros.h"
#include "coordinator/job/stored_distribution.h"
#include "coordinator/job/trace_choice.h"

namespace arbor::coordinator {

absl::StatusOr<std::vector<Rollout>> OpenFork(SearchTree& tree, const JobSpec& spec,
                                              const ForkSite& site,
                                              const arbor::v1::StepResult& structural_step,
                                              absl::Span<const entropix::SampledToken> candidates,
                                              absl::FunctionRef<uint64_t()> new_sequence,
                                              absl::FunctionRef<uint32_t()> new_branch) {
  std::vector<Rollout> rollouts;
  std::vector<Step> steps;
  for (const entropix::SampledToken& candidate : candidates) {
    Step s = TreeStep(structural_step, new_sequence());
    s.token_id = candidate.id;
    s.logprob = std::min(candidate.logprob, 0.0f);
    s.strategy = arbor::v1::STRATEGY_FORCED;  // Chosen by the search, not by a sample.
    Rollout rollout;
    rollout.sequence_id = s.sequence_id;
    rollout.branch_id = new_branch();
    rollout.token_id = candidate.id;
    rollout.score = RolloutScore(spec.policy.adaptive);
    rollout.score.Add(s.logprob, structural_step.metrics(), StepCertainty(structural_step));
    rollout.source = site.base;
    rollout.source.append.push_back(candidate.id);
    // The candidate counts as the rollout's first token.
    rollout.done = spec.IsStopToken(candidate.id) || site.max_len <= 1;
    rollout.candidate_index = static_cast<int>(rollouts.size());
    rollout.depth = site.depth;
    rollout.max_len = site.max_len;
    rollouts.push_back(std::move(rollout));
    steps.push_back(std::move(s));
  }
  ASSIGN_OR_RETURN(const std::vector<NodeId> nodes, tree.OpenBranch(site.point, steps));
  for (size_t i = 0; i < nodes.size(); ++i) rollouts[i].candidate = rollouts[i].leaf = nodes[i];
  return rollouts;
}

}  // namespace arbor::coordinator
