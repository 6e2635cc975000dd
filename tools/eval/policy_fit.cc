#include "tools/eval/policy_fit.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "entropix/decision.h"
#include "entropix/policy_config.h"
#include "google/protobuf/util/message_differencer.h"
#include "policy/policy_convert.h"
#include "tools/eval/report/stats.h"

namespace arbor::tools::eval {
namespace {

using arbor::v1::PolicyConfig;

constexpr entropix::Coefficients kPublished{};
constexpr float kPublishedT0 = entropix::SamplingParams{}.temperature;

float BaseTemperature(const PolicyConfig& policy) {
  return policy.sampling().has_temperature() ? policy.sampling().temperature() : kPublishedT0;
}

FitStage TemperatureLawStage() {
  FitStage stage{"ADAPTIVE's temperature law", {}};
  std::vector<std::pair<float, float>> laws = {{kPublishedT0, 1.0f}};
  for (float t0 : {kPublishedT0, 0.4f, 0.2f}) {
    for (float scale : {1.0f, 1.0f / 3.0f, 0.0f}) {
      if (t0 != kPublishedT0 || scale != 1.0f) laws.emplace_back(t0, scale);
    }
  }
  for (const auto& [t0, scale] : laws) {
    stage.candidates.push_back(
        {absl::StrFormat("T0 %.3g, terms x%.2g", t0, scale), [t0, scale](PolicyConfig& policy) {
           policy.mutable_sampling()->set_temperature(t0);
           arbor::v1::Coefficients& k = *policy.mutable_coefficients();
           k.set_ada_temp_logits(kPublished.ada_temp_logits * scale);
           k.set_ada_temp_attn(kPublished.ada_temp_attn * scale);
           k.set_ada_temp_agree(kPublished.ada_temp_agree * scale);
         }});
  }
  return stage;
}

// HELV's and LEHV's temperature as `base`·T0 (no metric terms) capped at `cap`, and HEHV's the same
// with `floor`.
void SetRows(PolicyConfig& policy, float base, float cap, float floor) {
  arbor::v1::Coefficients& k = *policy.mutable_coefficients();
  k.set_helv_temp_base(base);
  k.set_helv_temp_attn(0.0f);
  k.set_helv_temp_cap(cap);
  k.set_lehv_temp_base(base);
  k.set_lehv_temp_is(0.0f);
  k.set_lehv_temp_cap(cap);
  k.set_hehv_temp_base(base);
  k.set_hehv_temp_attn_vent(0.0f);
  k.set_hehv_temp_floor(floor);
}

FitStage QuadrantRowStage() {
  FitStage stage{"the quadrant rows' temperatures (HELV, LEHV, HEHV)", {}};
  stage.candidates.push_back({"rows as published", [](PolicyConfig&) {}});
  stage.candidates.push_back({"caps and HEHV floor x T0/0.666", [](PolicyConfig& policy) {
                                const float r = BaseTemperature(policy) / kPublishedT0;
                                arbor::v1::Coefficients& k = *policy.mutable_coefficients();
                                k.set_helv_temp_cap(kPublished.helv_temp_cap * r);
                                k.set_lehv_temp_cap(kPublished.lehv_temp_cap * r);
                                k.set_hehv_temp_floor(kPublished.hehv_temp_floor * r);
                              }});
  for (float base : {1.0f, 0.5f}) {
    stage.candidates.push_back(
        {absl::StrFormat("every row at T0 x%.2g", base), [base](PolicyConfig& policy) {
           const float t = base * BaseTemperature(policy);
           SetRows(policy, base, t, t);
         }});
  }
  return stage;
}

FitStage MinPStage() {
  FitStage stage{"min_p", {}};
  stage.candidates.push_back({"min_p as published", [](PolicyConfig&) {}});
  for (float min_p : {0.05f, 0.1f, 0.2f}) {
    stage.candidates.push_back(
        {absl::StrFormat("min_p %.2g fixed", min_p), [min_p](PolicyConfig& policy) {
           policy.mutable_sampling()->set_min_p(min_p);
           policy.mutable_coefficients()->set_ada_min_p_logits(0.0f);
         }});
  }
  return stage;
}

bool SamePolicy(const PolicyConfig& a, const PolicyConfig& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

// The temperature (0 where the step is ARGMAX) and min_p the CANONICAL sampler uses at each
// collected step under `policy`.
struct StepSampling {
  std::vector<double> temperature, min_p;
};
absl::StatusOr<StepSampling> SamplingOverSteps(const MetricSamples& samples,
                                               const PolicyConfig& policy) {
  PolicyConfig canonical = policy;
  canonical.set_mode(arbor::v1::POLICY_MODE_CANONICAL);
  ASSIGN_OR_RETURN(const entropix::PolicyConfig config,
                   policy::PolicyFromProto(canonical, entropix::PolicyConfig{}));
  StepSampling out;
  out.temperature.reserve(samples.size());
  out.min_p.reserve(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    entropix::Metrics m;
    m.entropy = static_cast<float>(samples.entropy[i]);
    m.varentropy = static_cast<float>(samples.varentropy[i]);
    m.attn_entropy = static_cast<float>(samples.attn_entropy[i]);
    m.attn_varentropy = static_cast<float>(samples.attn_varentropy[i]);
    m.agreement = static_cast<float>(samples.agreement[i]);
    m.interaction_strength = static_cast<float>(samples.interaction_strength[i]);
    const entropix::Decision d = entropix::Decide(m, config, {});
    out.temperature.push_back(d.strategy == entropix::Strategy::kArgmax ? 0.0
                                                                        : d.sampling.temperature);
    out.min_p.push_back(d.sampling.min_p);
  }
  return out;
}

// One stage's table: each scored candidate's temperature and min_p over the steps, accuracy and
// likelihood, the chosen one marked.
absl::StatusOr<std::string> StageTable(const MetricSamples& samples, const std::string& stage,
                                       const std::vector<std::string>& names,
                                       const std::vector<PolicyConfig>& policies,
                                       const std::vector<CandidateScore>& scores, size_t chosen) {
  std::string out = absl::StrCat("stage: ", stage, "\n");
  absl::StrAppendFormat(&out, "%-32s %8s %13s %6s %8s %8s %9s %12s\n", "candidate", "T median",
                        "T 10-90 %", "T 99 %", "min_p 50", "answers", "accuracy", "logprob/tok");
  for (size_t i = 0; i < policies.size(); ++i) {
    ASSIGN_OR_RETURN(const StepSampling sampling, SamplingOverSteps(samples, policies[i]));
    const std::vector<double>& t = sampling.temperature;
    absl::StrAppendFormat(&out, "%-32s %8.2f %6.2f-%-6.2f %6.2f %8.3f %8d %9.3f %12.3f%s\n",
                          names[i], Quantile(t, 0.5), Quantile(t, 0.1), Quantile(t, 0.9),
                          Quantile(t, 0.99), Quantile(sampling.min_p, 0.5), scores[i].answers(),
                          scores[i].accuracy(), scores[i].mean_logprob,
                          i == chosen ? "  <- chosen" : (i == 0 ? "  (kept unless beaten)" : ""));
  }
  if (chosen == 0 && policies.size() > 1) {
    absl::StrAppendFormat(&out, "(no candidate is more accurate at paired p < %.2g: kept)\n",
                          kFitSignificance);
  }
  return out;
}

}  // namespace

std::vector<FitStage> PolicyFitStages() {
  return {TemperatureLawStage(), QuadrantRowStage(), MinPStage()};
}

int CandidateScore::correct() const {
  return static_cast<int>(std::count(right.begin(), right.end(), true));
}

double CandidateScore::accuracy() const {
  return right.empty() ? 0.0 : static_cast<double>(correct()) / answers();
}

size_t ChooseCandidate(absl::Span<const CandidateScore> scores) {
  const CandidateScore& incumbent = scores.front();
  size_t best = 0;
  for (size_t i = 1; i < scores.size(); ++i) {
    const CandidateScore& s = scores[i];
    int64_t only_candidate = 0, only_incumbent = 0;
    for (size_t t = 0; t < s.right.size() && t < incumbent.right.size(); ++t) {
      only_candidate += s.right[t] && !incumbent.right[t];
      only_incumbent += !s.right[t] && incumbent.right[t];
    }
    if (only_candidate <= only_incumbent ||
        McNemarExactP(only_candidate, only_incumbent) >= kFitSignificance) {
      continue;
    }
    const double a = s.accuracy(), b = scores[best].accuracy();
    if (best == 0 || a > b || (a == b && s.mean_logprob > scores[best].mean_logprob)) best = i;
  }
  return best;
}

absl::Status FitPolicy(const MetricSamples& samples, const PolicyScorer& score,
                       const std::function<void(const std::string&)>& report,
                       PolicyConfig& policy) {
  std::optional<CandidateScore> carried;  // The score of `policy` as it stands.
  for (const FitStage& stage : PolicyFitStages()) {
    std::vector<std::string> names;
    std::vector<PolicyConfig> policies;
    for (const FitCandidate& candidate : stage.candidates) {
      PolicyConfig changed = policy;
      candidate.apply(changed);
      if (!policies.empty() && SamePolicy(changed, policies.front())) continue;
      names.push_back(candidate.name);
      policies.push_back(std::move(changed));
    }
    const bool reuse = carried.has_value() && SamePolicy(policies.front(), policy);
    ASSIGN_OR_RETURN(
        std::vector<CandidateScore> scores,
        score(std::vector<PolicyConfig>(policies.begin() + (reuse ? 1 : 0), policies.end())));
    if (reuse) scores.insert(scores.begin(), *carried);
    if (scores.size() != policies.size()) {
      return absl::InternalError(absl::StrCat("the scorer returned ", scores.size(), " scores for ",
                                              policies.size(), " policies"));
    }
    const size_t chosen = ChooseCandidate(scores);
    ASSIGN_OR_RETURN(const std::string table,
                     StageTable(samples, stage.name, names, policies, scores, chosen));
    report(table);
    policy = std::move(policies[chosen]);
    carried = scores[chosen];
  }
  return absl::OkStatus();
}

absl::StatusOr<double> SamplingQuantile(const MetricSamples& samples, const PolicyConfig& policy,
                                        SamplingField field, double q) {
  ASSIGN_OR_RETURN(StepSampling sampling, SamplingOverSteps(samples, policy));
  return Quantile(
      field == SamplingField::kMinP ? std::move(sampling.min_p) : std::move(sampling.temperature),
      q);
}

}  // namespace arbor::tools::eval
