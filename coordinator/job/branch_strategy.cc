#include "coordinator/job/branch_strategy.h"

#include <algorithm>
#include <utility>

#include "coordinator/job/beam_search.h"
#include "coordinator/job/rollout_search.h"
#include "coordinator/job/trace_search.h"

namespace arbor::coordinator {

std::vector<uint64_t> BranchStrategy::Sequences() const {
  std::vector<uint64_t> ids;
  ForEachRollout(rollouts_, [&ids](const Rollout& rollout) { ids.push_back(rollout.sequence_id); });
  return ids;
}

void BranchStrategy::Reprefill(const SearchTree& tree) {
  ForEachRollout(rollouts_, [this, &tree](Rollout& rollout) {
    rollout.source = SequenceSource{};
    rollout.source.is_new = true;
    rollout.source.append = PathTokens(tree, rollout.leaf);
    rollout.sent = false;
  });
}

std::vector<int32_t> BranchStrategy::PathTokens(const SearchTree& tree, NodeId leaf) const {
  std::vector<int32_t> rollout;
  for (NodeId id = leaf; id != point_; id = tree.node(id).parent) {
    rollout.push_back(tree.node(id).token_id);
  }
  std::vector<int32_t> tokens = tree.SequenceTokenIds();
  tokens.insert(tokens.end(), rollout.rbegin(), rollout.rend());
  return tokens;
}

ForkPlan MainForkPlan(const entropix::PolicyConfig& policy, int32_t remaining, int32_t spent) {
  // A TRACE rollout is the rest of the answer, and its fork opens no more traces than allowed,
  // nor any once the token budget is spent.
  if (policy.mode == entropix::PolicyMode::kTrace) {
    const int32_t budget = policy.trace.token_budget;
    if (budget > 0 && spent >= budget) return {0, remaining};
    return {std::min(policy.ForkWidth(), policy.trace.max_traces), remaining};
  }
  return {policy.ForkWidth(), std::min(policy.branch.max_len, remaining)};
}

std::unique_ptr<BranchStrategy> MakeBranchStrategy(
    const entropix::PolicyConfig& policy, NodeId point, std::vector<Rollout> rollouts,
    std::vector<TokenCertainty> trunk, std::shared_ptr<const base::AnswerPattern> answer_pattern) {
  if (policy.mode == entropix::PolicyMode::kTrace) {
    return std::make_unique<TraceSearch>(point, std::move(rollouts), policy.trace, std::move(trunk),
                                         std::move(answer_pattern));
  }
  if (policy.branch.mode == entropix::BranchMode::kBeam) {
    return std::make_unique<BeamSearch>(point, std::move(rollouts));
  }
  return std::make_unique<RolloutSearch>(point, std::move(rollouts));
}

}  // namespace arbor::coordinator
