// One rollout of an open branch (docs/ARCHITECTURE.md §4.2): a candidate's sequence on the
// worker, its leaf in the tree, its running score, and what its next Run must do first. ROLLOUT
// and TRACE keep one per candidate (each may hold a nested branch of its own rollouts), BEAM one
// per beam.
#ifndef ARBOR_COORDINATOR_JOB_ROLLOUT_H_
#define ARBOR_COORDINATOR_JOB_ROLLOUT_H_

#include <cstdint>
#include <vector>

#include "arbor/v1/worker.pb.h"
#include "coordinator/job/branch_search.h"
#include "coordinator/job/run_builder.h"
#include "coordinator/tree/search_tree.h"
#include "entropix/policy_config.h"

namespace arbor::coordinator {

struct Rollout {
  uint64_t sequence_id = 0;
  uint32_t branch_id = 0;
  NodeId candidate = kNoNode;
  NodeId leaf = kNoNode;
  int32_t token_id = 0;  // The leaf's token.
  RolloutScore score{entropix::AdaptiveOptions{}};
  // What the next Run does to the sequence first (BEAM: it continues, truncates or forks the
  // sequence of the beam it came from).
  SequenceSource source;
  bool sent = false;  // `source` was applied on the worker.
  bool done = false;  // Calm, stopped or at max_len.
  int32_t calm = 0;   // BEAM: consecutive calm steps.
  int candidate_index = 0;
  // ROLLOUT and TRACE: nesting depth (1 below the committed path), length budget with the
  // candidate, why its last Run stopped, and whether its next Run takes a structural decision's
  // fallback sample (INSERT, BACKSPACE, or a BRANCH without candidates).
  int32_t depth = 1;
  int32_t max_len = 0;
  arbor::v1::StopReason stop = arbor::v1::STOP_REASON_UNSPECIFIED;
  bool structural_off_once = false;
  // The nested branch open at `leaf`, one rollout per candidate; empty when none is.
  std::vector<Rollout> nested;
  // TRACE with trace.warmup_traces: a trace of the fork beyond the warm-up waits until the
  // warm-up traces are done (`held`), then runs with the early stop they set.
  bool held = false;
  bool stoppable = false;
  // TRACE: stopped by the coordinator once it could no longer overtake a finished trace.
  bool outranked = false;
};

// Calls `f` on every rollout of `rollouts` and, after each, on those nested in it.
template <typename Rollouts, typename F>
void ForEachRollout(Rollouts& rollouts, const F& f) {
  for (auto& rollout : rollouts) {
    f(rollout);
    ForEachRollout(rollout.nested, f);
  }
}

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_ROLLOUT_H_
