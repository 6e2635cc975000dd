#include "coordinator/job/trace_planner.h"

#include <algorithm>
#include <utility>

#include "coordinator/job/trace_search.h"

namespace arbor::coordinator {

TracePlanner::TracePlanner(const entropix::PolicyConfig& policy,
                           std::shared_ptr<const base::AnswerPattern> answer_pattern)
    : options_(policy.trace),
      fork_width_(std::min(policy.ForkWidth(), policy.trace.max_traces)),
      answer_pattern_(std::move(answer_pattern)) {}

void TracePlanner::OnMainStep(const arbor::v1::StepResult& step) {
  trunk_.push_back(StepCertainty(step));
}

ForkPlan TracePlanner::Plan(int32_t remaining) const {
  // A trace is the rest of the answer: it may run as long as the job may.
  const int32_t spent = static_cast<int32_t>(trunk_.size());
  if (options_.token_budget > 0 && spent >= options_.token_budget) return {0, remaining};
  return {fork_width_, remaining};
}

std::unique_ptr<BranchStrategy> TracePlanner::Open(NodeId point,
                                                   std::vector<Rollout> rollouts) const {
  return std::make_unique<TraceSearch>(point, std::move(rollouts), options_, trunk_,
                                       answer_pattern_);
}

}  // namespace arbor::coordinator
