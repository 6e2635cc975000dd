// BEAM mode of BRANCH (docs/ARCHITECTURE.md §4.2): width B over all children of a branch point,
// ranked by cumulative logprob at every step. Each beam step is one batched Run with max_steps = 1
// for all live beams; the worker's top-K of that step gives each beam's expansions; the best B of
// all expansions (and of the beams already finished) survive; a beam kept with several tokens
// forks. This header holds the ranking, free of RPC and tree state; the Job's beam steps that use
// it are defined in beam_search.cc.
#ifndef ARBOR_COORDINATOR_JOB_BEAM_SEARCH_H_
#define ARBOR_COORDINATOR_JOB_BEAM_SEARCH_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "arbor/v1/entropix.pb.h"
#include "coordinator/tree/search_tree.h"
#include "entropix/policy_config.h"

namespace arbor::coordinator {

struct BeamHypothesis {
  double cumulative_logprob = 0.0;
  // A live beam's next-token top-K (best first); empty for a finished beam, which competes as
  // it is.
  std::vector<TokenAlternative> next;
};

struct BeamPick {
  int hypothesis = 0;
  int32_t token_id = -1;  // -1: the finished hypothesis is kept as it is.
  float logprob = 0.0f;   // Of token_id.
  double cumulative_logprob = 0.0;
};

// The best `width` (>= 1) of: every finished hypothesis, and every live one extended by each of
// its next tokens; by cumulative logprob, ties to the earlier hypothesis, then to the better
// token, so the selection is deterministic. Best first.
std::vector<BeamPick> SelectBeams(absl::Span<const BeamHypothesis> hypotheses, int width);

// Whether the step that produced a token was back within bounds (H and V below the calm
// thresholds).
bool IsCalm(const arbor::v1::Metrics& metrics, const entropix::BranchOptions& branch);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_BEAM_SEARCH_H_
