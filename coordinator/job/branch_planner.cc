#include "coordinator/job/branch_planner.h"

#include <algorithm>
#include <utility>

#include "coordinator/job/beam_search.h"
#include "coordinator/job/rollout_search.h"
#include "coordinator/job/trace_planner.h"

namespace arbor::coordinator {
namespace {

// SEARCH (and CANONICAL, which never forks): ROLLOUT or BEAM over rollouts of branch.max_len.
class TreeSearchPlanner final : public BranchPlanner {
 public:
  explicit TreeSearchPlanner(const entropix::PolicyConfig& policy)
      : width_(policy.ForkWidth()), max_len_(policy.branch.max_len), mode_(policy.branch.mode) {}

  ForkPlan Plan(int32_t remaining) const override {
    return {width_, std::min(max_len_, remaining)};
  }

  std::unique_ptr<BranchStrategy> Open(NodeId point, std::vector<Rollout> rollouts) const override {
    if (mode_ == entropix::BranchMode::kBeam) {
      return std::make_unique<BeamSearch>(point, std::move(rollouts));
    }
    return std::make_unique<RolloutSearch>(point, std::move(rollouts));
  }

 private:
  const int width_;
  const int32_t max_len_;
  const entropix::BranchMode mode_;
};

}  // namespace

std::unique_ptr<BranchPlanner> BranchPlanner::Create(
    const entropix::PolicyConfig& policy,
    std::shared_ptr<const base::AnswerPattern> answer_pattern) {
  if (policy.mode == entropix::PolicyMode::kTrace) {
    return std::make_unique<TracePlanner>(policy, std::move(answer_pattern));
  }
  return std::make_unique<TreeSearchPlanner>(policy);
}

}  // namespace arbor::coordinator
