#include "coordinator/job/branch_strategy.h"

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

}  // namespace arbor::coordinator
