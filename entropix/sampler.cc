#include "entropix/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/softmax_moments.h"
#include "base/status_macros.h"
#include "entropix/top_k.h"

namespace arbor::entropix {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Candidate ids and the banned set, with the checks every entry point needs.
class CandidateView {
 public:
  static absl::StatusOr<CandidateView> Make(const Candidates& c, absl::Span<const int32_t> banned) {
    if (c.logits.empty()) return absl::InvalidArgumentError("candidates: empty list");
    if (!c.ids.empty() && c.ids.size() != c.logits.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("candidates: ", c.ids.size(), " ids for ", c.logits.size(), " logits"));
    }
    if (const int64_t bad = base::FindNonFinite(c.logits.data(), c.logits.size()); bad >= 0) {
      return absl::InvalidArgumentError(absl::StrCat("candidates: logit ", bad, " is ",
                                                     c.logits[bad], "; must be finite or -inf"));
    }
    CandidateView view(c);
    view.banned_.assign(banned.begin(), banned.end());
    std::sort(view.banned_.begin(), view.banned_.end());
    return view;
  }

  int64_t size() const { return c_.logits.size(); }
  int32_t id(int64_t i) const { return c_.ids.empty() ? static_cast<int32_t>(i) : c_.ids[i]; }
  float logit(int64_t i) const { return c_.logits[i]; }
  float logprob(int64_t i) const { return static_cast<float>(c_.logits[i] - c_.logsumexp); }
  // Banned or impossible.
  bool excluded(int64_t i) const {
    return c_.logits[i] == kNegInf ||
           (!banned_.empty() && std::binary_search(banned_.begin(), banned_.end(), id(i)));
  }
  // Largest logit that is not excluded; −inf when every candidate is.
  float MaxAllowed() const {
    if (banned_.empty()) return base::MaxOf(c_.logits.data(), size());
    float best = kNegInf;
    for (int64_t i = 0; i < size(); ++i) {
      if (!excluded(i)) best = std::max(best, c_.logits[i]);
    }
    return best;
  }

 private:
  explicit CandidateView(const Candidates& c) : c_(c) {}
  Candidates c_;
  std::vector<int32_t> banned_;
};

absl::Status CheckParams(const SamplingParams& p) {
  if (!(p.temperature > 0.0f) || !std::isfinite(p.temperature)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.temperature: ", p.temperature, " is outside (0, inf)"));
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.top_p: ", p.top_p, " is outside (0, 1]"));
  }
  if (!(p.min_p >= 0.0f && p.min_p < 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.min_p: ", p.min_p, " is outside [0, 1)"));
  }
  return absl::OkStatus();
}

// Index of the first token whose cumulative probability exceeds `target` (the last one when
// rounding leaves `target` at the total).
size_t CategoricalIndex(const std::vector<WeightedToken>& distribution, double target) {
  double cumulative = 0.0;
  for (size_t k = 0; k < distribution.size(); ++k) {
    cumulative += distribution[k].prob;
    if (target < cumulative) return k;
  }
  return distribution.size() - 1;
}

absl::Status NothingLeft() {
  return absl::FailedPreconditionError(
      "candidates: every candidate is banned or impossible (-inf); nothing to sample");
}

// The smallest float f with double(f) ≥ threshold, so that the scan below compares floats
// exactly as the float64 test would.
float FloatAtLeast(double threshold) {
  const float f = static_cast<float>(threshold);
  if (static_cast<double>(f) >= threshold) return f;
  return std::nextafter(f, std::numeric_limits<float>::infinity());
}

// The candidates with logit ≥ threshold that are not excluded, the best top_k of them (all when
// top_k ≤ 0), in the canonical order. One pass; only survivors of the threshold reach the
// banned-set lookup and the top-k heap.
std::vector<ScoredIndex> Survivors(const CandidateView& view, float threshold, int32_t top_k) {
  if (top_k > 0) {
    TopKStream stream(top_k);
    float bar = threshold;  // One well-predicted test per candidate once the heap is full.
    for (int64_t i = 0; i < view.size(); ++i) {
      const float x = view.logit(i);
      if (x >= bar && !view.excluded(i)) {
        stream.Offer(x, static_cast<int32_t>(i));
        bar = std::max(threshold, stream.bar());
      }
    }
    return std::move(stream).TakeSorted();
  }
  std::vector<ScoredIndex> kept;
  for (int64_t i = 0; i < view.size(); ++i) {
    const float x = view.logit(i);
    if (x >= threshold && !view.excluded(i)) kept.push_back({x, static_cast<int32_t>(i)});
  }
  KeepTopK(kept, -1);
  return kept;
}

absl::StatusOr<std::vector<WeightedToken>> Transform(const CandidateView& view,
                                                     const SamplingParams& params) {
  RETURN_IF_ERROR(CheckParams(params));
  const float max_logit = view.MaxAllowed();
  if (max_logit == kNegInf) return NothingLeft();
  const double inv_t = 1.0 / params.temperature;
  // min_p in logit space: p ≥ min_p·p_max ⇔ (l − l_max)/T ≥ log(min_p). No exp per candidate.
  const float threshold =
      params.min_p > 0.0f
          ? FloatAtLeast(max_logit + params.temperature * std::log(double{params.min_p}))
          : kNegInf;
  // Sorted, most likely first.
  const std::vector<ScoredIndex> kept = Survivors(view, threshold, params.top_k);

  std::vector<double> weight(kept.size());
  double total = 0.0;
  for (size_t i = 0; i < kept.size(); ++i) {
    weight[i] = std::exp((kept[i].value - max_logit) * inv_t);
    total += weight[i];
  }
  size_t count = kept.size();
  if (params.top_p < 1.0f) {  // Smallest prefix whose mass reaches top_p; at least one token.
    const double target = params.top_p * total;
    double cumulative = 0.0;
    count = 0;
    while (count < kept.size() && (count == 0 || cumulative < target)) {
      cumulative += weight[count++];
    }
    total = cumulative;
  }
  std::vector<WeightedToken> out(count);
  for (size_t i = 0; i < count; ++i) {
    const int64_t index = kept[i].index;
    out[i] = {view.id(index), weight[i] / total, view.logprob(index)};
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<WeightedToken>> TransformedDistribution(
    const Candidates& candidates, const SamplingParams& params, absl::Span<const int32_t> banned) {
  ASSIGN_OR_RETURN(const CandidateView view, CandidateView::Make(candidates, banned));
  return Transform(view, params);
}

const WeightedToken& DrawFrom(const std::vector<WeightedToken>& distribution, double u) {
  return distribution[CategoricalIndex(distribution, u)];
}

absl::StatusOr<SampledToken> Sample(const Candidates& candidates, const SamplingParams& params,
                                    const RngKey& key, absl::Span<const int32_t> banned) {
  ASSIGN_OR_RETURN(const std::vector<WeightedToken> dist,
                   TransformedDistribution(candidates, params, banned));
  const WeightedToken& token = DrawFrom(dist, UniformDouble(key));
  return SampledToken{token.id, token.logprob};
}

absl::StatusOr<SampledToken> Argmax(const Candidates& candidates,
                                    absl::Span<const int32_t> banned) {
  ASSIGN_OR_RETURN(const CandidateView view, CandidateView::Make(candidates, banned));
  int64_t best = -1;
  for (int64_t i = 0; i < view.size(); ++i) {
    if (!view.excluded(i) && (best < 0 || view.logit(i) > view.logit(best))) best = i;
  }
  if (best < 0) return NothingLeft();
  return SampledToken{view.id(best), view.logprob(best)};
}

absl::StatusOr<AdaptiveSample> SampleAdaptive(const Candidates& candidates,
                                              const SamplingParams& params, int n_samples,
                                              double confidence, const RngKey& key,
                                              absl::Span<const int32_t> banned) {
  if (n_samples < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("adaptive.n_samples: ", n_samples, " is outside [1, 64]"));
  }
  ASSIGN_OR_RETURN(const std::vector<WeightedToken> dist,
                   TransformedDistribution(candidates, params, banned));
  AdaptiveSample best;
  for (int i = 0; i < n_samples; ++i) {
    const WeightedToken& token = DrawFrom(dist, UniformDouble(key.WithDraw(key.draw_index + i)));
    const double score = token.logprob + confidence;
    if (i == 0 || score > best.score) best = {{token.id, token.logprob}, score};
  }
  return best;
}

namespace {

// The transformed distribution cut to the tokens with p ≥ candidate_min_p·p_max: a prefix, since
// it is sorted.
absl::StatusOr<std::vector<WeightedToken>> QualifyingPool(const Candidates& candidates,
                                                          const SamplingParams& params, int width,
                                                          float candidate_min_p,
                                                          absl::Span<const int32_t> banned) {
  if (width < 1) {
    return absl::InvalidArgumentError(absl::StrCat("branch.width: ", width, " is outside [2, 64]"));
  }
  ASSIGN_OR_RETURN(std::vector<WeightedToken> pool,
                   TransformedDistribution(candidates, params, banned));
  const double floor = candidate_min_p * pool.front().prob;
  size_t qualifying = 0;
  while (qualifying < pool.size() && pool[qualifying].prob >= floor) ++qualifying;
  pool.resize(qualifying);
  return pool;
}

}  // namespace

absl::StatusOr<std::vector<SampledToken>> SelectBranchCandidates(const Candidates& candidates,
                                                                 const SamplingParams& params,
                                                                 int width, float candidate_min_p,
                                                                 const RngKey& key,
                                                                 absl::Span<const int32_t> banned) {
  ASSIGN_OR_RETURN(std::vector<WeightedToken> pool,
                   QualifyingPool(candidates, params, width, candidate_min_p, banned));
  std::vector<SampledToken> chosen;
  for (int i = 0; i < width && !pool.empty(); ++i) {
    double total = 0.0;
    for (const WeightedToken& token : pool) total += token.prob;
    // Without replacement: the remaining mass is renormalised by scaling the uniform.
    const size_t pick =
        CategoricalIndex(pool, UniformDouble(key.WithDraw(key.draw_index + i)) * total);
    chosen.push_back({pool[pick].id, pool[pick].logprob});
    pool.erase(pool.begin() + pick);
  }
  return chosen;
}

absl::StatusOr<std::vector<SampledToken>> TopBranchCandidates(const Candidates& candidates,
                                                              int width, float candidate_min_p) {
  SamplingParams plain;
  plain.temperature = 1.0f;
  plain.top_p = 1.0f;
  plain.top_k = 0;
  plain.min_p = 0.0f;
  ASSIGN_OR_RETURN(std::vector<WeightedToken> pool,
                   QualifyingPool(candidates, plain, width, candidate_min_p, {}));
  std::vector<SampledToken> chosen;
  for (size_t i = 0; i < pool.size() && static_cast<int>(i) < width; ++i) {
    chosen.push_back({pool[i].id, pool[i].logprob});
  }
  return chosen;
}

}  // namespace arbor::entropix
