#include "coordinator/job/run_builder.h"

#include <utility>

#include "policy/policy_convert.h"

namespace arbor::coordinator {

RunBuilder RunBuilder::ForJob(const JobSpec& spec, int32_t top_k) {
  Settings settings;
  settings.policy = policy::PolicyToProto(spec.policy);
  settings.stop.mutable_stop_token_ids()->Add(spec.stop_token_ids.begin(),
                                              spec.stop_token_ids.end());
  settings.stop.set_ignore_eos(spec.ignore_eos);
  settings.seed = spec.seed;
  settings.processors = spec.processors;
  settings.constraint = spec.constraint;
  settings.prompt_length = static_cast<int32_t>(spec.prompt_token_ids.size());
  settings.top_k = top_k;
  // BACKSPACE re-draws from the removed token's top-K: the worker reports it on the step before
  // a BACKSPACE stop (or it came as a previous run's last step), so only clients that asked for
  // log-probabilities need it on every step. TRACE judges answers by every token's margin, so
  // it needs them all too.
  settings.top_k_every_step =
      spec.top_logprobs > 0 || spec.policy.mode == entropix::PolicyMode::kTrace;
  return RunBuilder(std::move(settings));
}

arbor::v1::RunItem RunBuilder::BaseItem(uint64_t sequence_id, const SequenceSource& source,
                                        int32_t max_steps, const PolicyBudgets& budgets) const {
  arbor::v1::RunItem item;
  item.set_sequence_id(sequence_id);
  if (source.fork_from) {
    item.set_fork_from(*source.fork_from);
    item.set_fork_length(source.fork_length);
  } else if (!source.is_new) {
    item.set_continues(true);
    if (source.truncate_to) item.set_truncate_to(*source.truncate_to);
  }
  item.mutable_append()->Add(source.append.begin(), source.append.end());
  item.set_max_steps(max_steps);
  *item.mutable_policy() = settings_.policy;
  *item.mutable_stop() = settings_.stop;
  item.set_top_k(settings_.top_k);
  item.set_top_k_every_step(settings_.top_k_every_step);
  item.set_seed(settings_.seed);
  if (settings_.processors.ByteSizeLong() > 0) {
    *item.mutable_processors() = settings_.processors;
    item.set_prompt_length(settings_.prompt_length);
  }
  if (settings_.constraint.kind_case() != arbor::v1::OutputConstraint::KIND_NOT_SET) {
    *item.mutable_constraint() = settings_.constraint;
    item.set_prompt_length(settings_.prompt_length);
  }
  item.mutable_bans()->Add(budgets.bans.begin(), budgets.bans.end());
  item.set_generated_before(budgets.generated_before);
  item.set_inserts_used(budgets.inserts_used);
  item.set_backspaces_used(budgets.backspaces_used);
  if (budgets.last_insert_position >= 0) {
    item.set_last_insert_position(budgets.last_insert_position);
  }
  return item;
}

arbor::v1::RunItem RunBuilder::MainItem(uint64_t sequence_id, const SequenceSource& source,
                                        int32_t max_steps, bool stop_on_structural,
                                        const PolicyBudgets& budgets) const {
  arbor::v1::RunItem item = BaseItem(sequence_id, source, max_steps, budgets);
  item.set_stop_on_structural(stop_on_structural);
  return item;
}

arbor::v1::RunItem RunBuilder::RolloutItem(uint64_t sequence_id, const SequenceSource& source,
                                           int32_t max_steps, uint32_t branch_id,
                                           int32_t branch_depth, bool stop_on_structural,
                                           const PolicyBudgets& budgets) const {
  arbor::v1::RunItem item = BaseItem(sequence_id, source, max_steps, budgets);
  item.set_branch_id(branch_id);
  item.set_branch_depth(branch_depth);
  // A TRACE rollout is a whole answer: it runs to its stop, never back to a committed path.
  item.set_stop_when_calm(settings_.policy.mode() != arbor::v1::POLICY_MODE_TRACE);
  item.set_stop_on_structural(stop_on_structural);
  return item;
}

}  // namespace arbor::coordinator
