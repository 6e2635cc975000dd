// TRACE mode's side of the main path (docs/ARCHITECTURE.md §4.5): what its traces are judged by
// across the job — the answer pattern and the certainties of the committed
// generated tokens above the fork — and how its forks open: no more traces than
// trace.max_traces, none once trace.token_budget is spent, each trace the rest of the answer.
// Its branches are TraceSearch (trace_search.h).
#ifndef ARBOR_COORDINATOR_JOB_TRACE_PLANNER_H_
#define ARBOR_COORDINATOR_JOB_TRACE_PLANNER_H_

#include <memory>
#include <vector>

#include "base/answer_pattern.h"
#include "coordinator/job/branch_planner.h"
#include "coordinator/job/trace_choice.h"

namespace arbor::coordinator {

class TracePlanner final : public BranchPlanner {
 public:
  // `answer_pattern`: what a trace's answer is (null: the whole trace).
  TracePlanner(const entropix::PolicyConfig& policy,
               std::shared_ptr<const base::AnswerPattern> answer_pattern);

  void OnMainStep(const arbor::v1::StepResult& step) override;
  ForkPlan Plan(int32_t remaining) const override;
  std::unique_ptr<BranchStrategy> Open(NodeId point, std::vector<Rollout> rollouts) const override;

 private:
  const entropix::TraceOptions options_;
  const int fork_width_;
  // What a trace's answer is; null when the pattern is empty (the whole trace).
  const std::shared_ptr<const base::AnswerPattern> answer_pattern_;
  std::vector<TokenCertainty> trunk_;  // One per main-path step recorded.
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_TRACE_PLANNER_H_
