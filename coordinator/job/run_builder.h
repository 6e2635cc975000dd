// How a job phrases its work for the worker (worker.proto RunItem): the main path's runs and a
// branch's rollout children. Everything the job keeps constant (policy, stop conditions, seed,
// top-K) is set once; each item adds where its sequence comes from, what to append, how far to
// decode, and the budgets the worker's local policy must respect.
#ifndef ARBOR_COORDINATOR_JOB_RUN_BUILDER_H_
#define ARBOR_COORDINATOR_JOB_RUN_BUILDER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "arbor/v1/worker.pb.h"
#include "coordinator/job/job_spec.h"

namespace arbor::coordinator {

// What the job has spent so far; the worker builds its DecisionContext from it.
struct PolicyBudgets {
  int32_t generated_before = 0;
  int32_t inserts_used = 0;
  int32_t backspaces_used = 0;
  int32_t last_insert_position = -1;
  std::vector<arbor::v1::TokenBan> bans;  // Every BACKSPACE so far.
};

// Where an item's sequence comes from.
struct SequenceSource {
  // Fork from this live sequence (its first `fork_length` tokens); otherwise the sequence is
  // new when `is_new`, else it continues.
  std::optional<uint64_t> fork_from;
  int32_t fork_length = 0;
  bool is_new = false;
  std::optional<int32_t> truncate_to;  // Continue only.
  std::vector<int32_t> append;
};

class RunBuilder {
 public:
  struct Settings {
    arbor::v1::PolicyConfig policy;  // Resolved, every field set.
    arbor::v1::StopConditions stop;  // Token ids only: stop strings are checked on text here.
    uint64_t seed = 0;
    arbor::v1::LogitProcessors processors;
    arbor::v1::OutputConstraint constraint;  // Unset: none.
    int32_t prompt_length =
        0;              // The processors count output tokens, the constraint reads, from here.
    int32_t top_k = 0;  // Returned on stopping steps (and every step when asked).
    bool top_k_every_step = false;  // Needed to backspace any token, and for top_logprobs.
  };

  explicit RunBuilder(Settings settings) : settings_(std::move(settings)) {}
  // The builder of the job `spec` describes, asking for `top_k` alternatives.
  static RunBuilder ForJob(const JobSpec& spec, int32_t top_k);

  // One item of the main path (branch id 0, depth 0).
  arbor::v1::RunItem MainItem(uint64_t sequence_id, const SequenceSource& source, int32_t max_steps,
                              bool stop_on_structural, const PolicyBudgets& budgets) const;

  // One rollout child at `branch_depth` (>= 1): its source already appends the candidate token;
  // it stops when back within bounds (TRACE: only at its end), and returns control for structural
  // decisions only with `stop_on_structural` (else they become fallback samples), which is what
  // bounds the nesting.
  arbor::v1::RunItem RolloutItem(uint64_t sequence_id, const SequenceSource& source,
                                 int32_t max_steps, uint32_t branch_id, int32_t branch_depth,
                                 bool stop_on_structural, const PolicyBudgets& budgets) const;

  const Settings& settings() const { return settings_; }

 private:
  arbor::v1::RunItem BaseItem(uint64_t sequence_id, const SequenceSource& source, int32_t max_steps,
                              const PolicyBudgets& budgets) const;

  Settings settings_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_RUN_BUILDER_H_
