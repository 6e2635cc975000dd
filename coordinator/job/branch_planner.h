// What a job's policy does where its main path forks, for the whole life of the job: how many
// candidates the fork opens and how long each rollout may run, and the strategy
// (branch_strategy.h) that decides the branch. The job tells it each main-path step it records,
// so a mode that judges branches by the path above them keeps that state here rather than in
// the job: TRACE (trace_planner.h) keeps its answer pattern and the certainties of the
// committed tokens; SEARCH and CANONICAL keep nothing.
#ifndef ARBOR_COORDINATOR_JOB_BRANCH_PLANNER_H_
#define ARBOR_COORDINATOR_JOB_BRANCH_PLANNER_H_

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "arbor/v1/worker.pb.h"
#include "base/answer_pattern.h"
#include "coordinator/job/branch_strategy.h"
#include "coordinator/job/rollout.h"
#include "coordinator/tree/search_tree.h"
#include "entropix/policy_config.h"

namespace arbor::coordinator {

// How the main path's fork opens: how many candidates at most (0: none), and how long each
// rollout may run.
struct ForkPlan {
  int width = 0;
  int32_t max_len = 0;
};

class BranchPlanner {
 public:
  virtual ~BranchPlanner() = default;

  // The planner `policy` names; TRACE's answer is what `answer_pattern` matches (null: the
  // whole trace).
  static std::unique_ptr<BranchPlanner> Create(
      const entropix::PolicyConfig& policy,
      std::shared_ptr<const base::AnswerPattern> answer_pattern);

  // A step the main path recorded (generated, not inserted or forked).
  virtual void OnMainStep(const arbor::v1::StepResult& step) { (void)step; }
  // The main path's fork with `remaining` tokens the job may still generate.
  virtual ForkPlan Plan(int32_t remaining) const = 0;
  // The strategy for the branch the main path opened at `point` with `rollouts`.
  virtual std::unique_ptr<BranchStrategy> Open(NodeId point,
                                               std::vector<Rollout> rollouts) const = 0;

  // A fork of `width` candidates, as wide as the cap lets it (any fork: main or nested).
  int CapWidth(int width) const { return std::min(width, width_cap_); }
  // The worker could not hold a branch of `width` rollouts: later forks take at most half as
  // many; returns the new cap. Under 2 the job no longer branches.
  int Shrink(int width) { return width_cap_ = std::min(width_cap_, width) / 2; }
  bool branching_off() const { return width_cap_ < 2; }
  // The RNG branch of a new rollout: 1, 2, ... over the job (0 is the main path's).
  uint32_t NewBranchId() { return next_branch_id_++; }

 private:
  int width_cap_ = std::numeric_limits<int>::max();
  uint32_t next_branch_id_ = 1;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_BRANCH_PLANNER_H_
