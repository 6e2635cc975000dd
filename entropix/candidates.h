// The top-K candidates a decode step samples from instead of the whole vocabulary row:
// how many the policy can need, and picking them. The sampler's pipeline (temperature → min_p →
// top_k → top_p) only ever keeps tokens among the row's `top_k` most likely that are not banned,
// and normalises over the tokens it keeps, so given every row's largest possible top_k plus the
// banned tokens, sampling from those candidates (in the canonical order, with the full row's
// logsumexp) draws exactly the tokens the full row would: same survivors, same order, same sums.
// That lets a backend hand back a few hundred floats per row instead of a 128,256-wide row.
#ifndef ARBOR_ENTROPIX_CANDIDATES_H_
#define ARBOR_ENTROPIX_CANDIDATES_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "entropix/policy_config.h"
#include "entropix/sampler.h"
#include "entropix/top_k.h"

namespace arbor::entropix {

// The largest top_k any strategy of `config` can sample with (decision.h): the configured one,
// LEHV's widening by (1 + |lehv_top_k_agreement|·|1 − agreement|) with agreement in [0, 2],
// ADAPTIVE's clip at 100, ARGMAX's 1.
int32_t MaxPolicyTopK(const PolicyConfig& config);

// How many candidates a step needs so that sampling from them equals sampling from the full row:
// MaxPolicyTopK plus the tokens banned at the position (a banned token may be among the best).
int32_t CandidatesNeeded(const PolicyConfig& config, size_t banned);

// The k most likely entries of a row (all when k ≥ its size), in the canonical order of top_k.h
// (logit descending, then token id ascending): what a backend's reduction hands back
// (entropix::SummarizeLogits selects them on the host).
struct CandidateRow {
  std::vector<float> logits;
  std::vector<int32_t> ids;
  // The sampler's view; `logsumexp` is the full row's (LogitMetrics::logsumexp), so reported
  // logprobs stay those of the whole distribution.
  Candidates View(double logsumexp) const { return Candidates{logits, ids, logsumexp}; }
  // From a selection already in the canonical order (top_k.h).
  static CandidateRow Of(const std::vector<ScoredIndex>& best);
};

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_CANDIDATES_H_
