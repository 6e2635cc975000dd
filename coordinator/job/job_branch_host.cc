#include "coordinator/job/job_branch_host.h"

#include <utility>

#include "base/status_macros.h"
#include "coordinator/job/branch_search.h"
#include "coordinator/job/fork.h"

namespace arbor::coordinator {

PolicyBudgets JobBranchHost::Budgets() const {
  PolicyBudgets budgets = *parts_.used;
  budgets.generated_before = parts_.tree->GeneratedTokenCount();
  return budgets;
}

int32_t JobBranchHost::Remaining() const {
  return parts_.spec->max_tokens - parts_.tree->GeneratedTokenCount();
}

absl::StatusOr<std::vector<Rollout>> JobBranchHost::Fork(
    NodeId point, const arbor::v1::StepResult& structural_step, uint32_t rng_branch,
    const SequenceSource& base, int32_t depth, int32_t max_len, int width) {
  const JobSpec& spec = *parts_.spec;
  const entropix::RngKey key{spec.seed, static_cast<uint32_t>(structural_step.position()),
                             rng_branch, 0};
  absl::StatusOr<std::vector<entropix::SampledToken>> candidates =
      ChooseBranchCandidates(structural_step, spec.policy, parts_.planner->CapWidth(width), key);
  if (!candidates.ok() || candidates->empty()) return std::vector<Rollout>{};
  ASSIGN_OR_RETURN(
      std::vector<Rollout> rollouts,
      OpenFork(
          *parts_.tree, spec, {point, base, depth, max_len}, structural_step, *candidates,
          [this] { return NewSequenceId(); }, [this] { return NewBranchId(); }));
  Count(structural_step.strategy());
  arbor::v1::GenerateEvent event;
  arbor::v1::BranchOpened& opened = *event.mutable_branch_opened();
  opened.set_parent_node_id(point);
  *opened.mutable_metrics() = structural_step.metrics();
  for (const Rollout& rollout : rollouts) {
    arbor::v1::BranchCandidate& c = *opened.add_candidates();
    c.set_node_id(rollout.candidate);
    c.set_token_id(rollout.token_id);
    c.set_text(parts_.decode({rollout.token_id}));
    c.set_logprob(parts_.tree->node(rollout.candidate).logprob);
  }
  parts_.output->Send(std::move(event));
  for (const Rollout& rollout : rollouts) {
    parts_.output->reasoning().Open(rollout.sequence_id, base.fork_from,
                                    structural_step.position(), rollout.token_id, rollout.done);
  }
  return rollouts;
}

}  // namespace arbor::coordinator
