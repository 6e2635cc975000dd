#include "tools/eval/temperature_fit.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "entropix/decision.h"
#include "entropix/policy_config.h"

namespace arbor::eval {
namespace {

// Every step in the ADAPTIVE row (no other row's condition can hold), with the law applied.
entropix::PolicyConfig AdaptiveOnly(const TemperatureLaw& law) {
  entropix::PolicyConfig c;
  c.mode = entropix::PolicyMode::kCanonical;
  c.thresholds.lelv_entropy = 0.0f;
  c.thresholds.helv_entropy = 64.0f;
  c.thresholds.lehv_varentropy = 4096.0f;
  c.thresholds.hehv_varentropy = 4096.0f;
  c.sampling.temperature = law.t0;
  const entropix::Coefficients published;
  c.coefficients.ada_temp_logits = published.ada_temp_logits * law.scale;
  c.coefficients.ada_temp_attn = published.ada_temp_attn * law.scale;
  c.coefficients.ada_temp_agree = published.ada_temp_agree * law.scale;
  return c;
}

}  // namespace

std::string TemperatureLaw::Name() const {
  return absl::StrFormat("T0 %.3g, terms x%.2g", t0, scale);
}

std::vector<TemperatureLaw> TemperatureLawGrid() {
  std::vector<TemperatureLaw> grid = {TemperatureLaw{}};
  for (float t0 : {0.666f, 0.4f, 0.2f}) {
    for (float scale : {1.0f, 1.0f / 3.0f, 0.0f}) {
      if (t0 == grid.front().t0 && scale == grid.front().scale) continue;
      grid.push_back({t0, scale});
    }
  }
  return grid;
}

void ApplyLaw(const TemperatureLaw& law, arbor::v1::PolicyConfig& policy) {
  const entropix::PolicyConfig c = AdaptiveOnly(law);
  policy.mutable_sampling()->set_temperature(c.sampling.temperature);
  arbor::v1::Coefficients& k = *policy.mutable_coefficients();
  k.set_ada_temp_logits(c.coefficients.ada_temp_logits);
  k.set_ada_temp_attn(c.coefficients.ada_temp_attn);
  k.set_ada_temp_agree(c.coefficients.ada_temp_agree);
}

double TemperatureQuantile(const MetricSamples& samples, const TemperatureLaw& law, double q) {
  const entropix::PolicyConfig config = AdaptiveOnly(law);
  std::vector<double> temperatures;
  temperatures.reserve(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    entropix::Metrics m;
    m.entropy = static_cast<float>(samples.entropy[i]);
    m.varentropy = static_cast<float>(samples.varentropy[i]);
    m.attn_entropy = static_cast<float>(samples.attn_entropy[i]);
    m.attn_varentropy = static_cast<float>(samples.attn_varentropy[i]);
    m.agreement = static_cast<float>(samples.agreement[i]);
    m.interaction_strength = static_cast<float>(samples.interaction_strength[i]);
    temperatures.push_back(entropix::Decide(m, config, {}).sampling.temperature);
  }
  return Quantile(std::move(temperatures), q);
}

size_t ChooseLaw(absl::Span<const LawScore> scores) {
  size_t best = 0;
  for (size_t i = 1; i < scores.size(); ++i) {
    const double a = scores[i].accuracy(), b = scores[best].accuracy();
    if (a > b || (a == b && best != 0 && scores[i].mean_logprob > scores[best].mean_logprob)) {
      best = i;
    }
  }
  return best;
}

std::string LawTable(const MetricSamples& samples, absl::Span<const LawScore> scores,
                     size_t chosen) {
  std::string out = absl::StrFormat("%-22s %8s %14s %9s %9s %12s\n", "law", "T median",
                                    "T 10-90 %", "answers", "accuracy", "logprob/tok");
  for (size_t i = 0; i < scores.size(); ++i) {
    const LawScore& s = scores[i];
    absl::StrAppendFormat(&out, "%-22s %8.2f %6.2f-%-7.2f %9d %9.3f %12.3f%s\n", s.law.Name(),
                          TemperatureQuantile(samples, s.law, 0.5),
                          TemperatureQuantile(samples, s.law, 0.1),
                          TemperatureQuantile(samples, s.law, 0.9), s.answers, s.accuracy(),
                          s.mean_logprob,
                          i == chosen ? "  <- chosen" : (i == 0 ? "  (published)" : ""));
  }
  return out;
}

}  // namespace arbor::eval
