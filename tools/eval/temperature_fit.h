// Fitting ADAPTIVE's temperature law to the served model (`arbor calibrate --fit_temperature`).
// The published law, T = T0·(1 + 0.3·(H+V) + 0.2·(attn_ent+attn_vent) − 0.2·agreement) with
// T0 0.666, was set for Llama 3; on a small model whose steps carry several bits of entropy it
// samples at T ≈ 2–3 and derails (docs/SEARCH_QUALITY.md). Thresholds cannot fix that, so the
// fit tries a grid of laws — lower base temperatures and weaker (or no) uncertainty terms — on
// calibration tasks, each on the same items and seeds, and keeps the most accurate (likelihood
// breaks ties; the published law stays unless another is strictly more accurate).
#ifndef ARBOR_TOOLS_EVAL_TEMPERATURE_FIT_H_
#define ARBOR_TOOLS_EVAL_TEMPERATURE_FIT_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "arbor/v1/entropix.pb.h"
#include "tools/eval/calibration.h"

namespace arbor::eval {

// One candidate: the base temperature and the factor on all three ADAPTIVE temperature terms.
struct TemperatureLaw {
  float t0 = 0.666f;
  float scale = 1.0f;  // 1: the published coefficients (0.3, 0.2, 0.2); 0: T = T0 everywhere.
  std::string Name() const;
};

// The published law first, then T0 ∈ {0.666, 0.4, 0.2} × scale ∈ {1, 1/3, 0}.
std::vector<TemperatureLaw> TemperatureLawGrid();

// `policy` with the law's sampling.temperature and ADAPTIVE temperature coefficients.
void ApplyLaw(const TemperatureLaw& law, arbor::v1::PolicyConfig& policy);

// The q-quantile of the temperature ADAPTIVE samples at under `law` over the collected steps
// (entropix's own formula, clamped as it clamps).
double TemperatureQuantile(const MetricSamples& samples, const TemperatureLaw& law, double q);

// What one law scored on the calibration tasks.
struct LawScore {
  TemperatureLaw law;
  int answers = 0;
  int correct = 0;
  double mean_logprob = 0.0;  // Per committed token, averaged over answers.
  double accuracy() const { return answers > 0 ? static_cast<double>(correct) / answers : 0.0; }
};

// Index of the law to keep: the most accurate, then the most likely; index 0 (the published law)
// unless another is strictly better. `scores` must be non-empty.
size_t ChooseLaw(absl::Span<const LawScore> scores);

// The fit's table: each law's median (and 10–90 %) temperature, accuracy and likelihood, the
// chosen one marked.
std::string LawTable(const MetricSamples& samples, absl::Span<const LawScore> scores,
                     size_t chosen);

}  // namespace arbor::eval

#endif  // ARBOR_TOOLS_EVAL_TEMPERATURE_FIT_H_
