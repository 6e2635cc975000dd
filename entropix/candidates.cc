#include "entropix/candidates.h"

#include <algorithm>
#include <cmath>

#include "entropix/decision.h"
#include "entropix/top_k.h"

namespace arbor::entropix {

int32_t MaxPolicyTopK(const PolicyConfig& config) {
  const int32_t top_k = config.sampling.top_k;
  const Coefficients& c = config.coefficients;
  // LEHV: trunc(top_k · (1 + c·(1 − agreement))) with |1 − agreement| ≤ 1; one more for the
  // float product rounding up across an integer.
  const double widened = std::floor(top_k * (1.0 + std::abs(double{c.lehv_top_k_agreement}))) + 1;
  const int32_t lehv =
      std::max(c.lehv_top_k_min, static_cast<int32_t>(std::min(widened, double{1 << 30})));
  return std::max({top_k, lehv, kAdaptiveTopKMax, 1});
}

int32_t CandidatesNeeded(const PolicyConfig& config, size_t banned) {
  const int64_t needed = int64_t{MaxPolicyTopK(config)} + static_cast<int64_t>(banned);
  return static_cast<int32_t>(std::min<int64_t>(needed, 1 << 30));
}

CandidateRow CandidateRow::Of(const std::vector<ScoredIndex>& best) {
  CandidateRow out;
  out.logits.reserve(best.size());
  out.ids.reserve(best.size());
  for (const ScoredIndex& s : best) {
    out.logits.push_back(s.value);
    out.ids.push_back(s.index);
  }
  return out;
}

}  // namespace arbor::entropix
