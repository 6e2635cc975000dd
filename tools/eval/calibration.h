// Per-model thresholds for the decision matrix (`arbor calibrate`). The published entropix
// thresholds were set by hand for Llama-3's 128k vocabulary; a model with another vocabulary or
// training sees other entropies. Calibration collects the step metrics the model produces on
// representative text and places each threshold at a chosen quantile of its metric, so the rows
// fire on the intended share of steps whatever the model.
//
// Default quantiles (override any with --quantiles key=q,...):
//   lelv_entropy, lelv_varentropy        0.25  ARGMAX on the calmest quarter (in both)
//   helv_entropy                          0.95  INSERT: entropy in the top 5 %...
//   helv_varentropy                       0.50  ...with varentropy below the median
//   lehv_entropy                          0.95  BRANCH: entropy below the top 5 %...
//   lehv_varentropy                       0.95  ...with varentropy in the top 5 %
//   hehv_entropy                          0.90  BACKSPACE: entropy in the top 10 %...
//   hehv_varentropy                       0.95  ...with varentropy in the top 5 %
//   calm_entropy, calm_varentropy         0.50  a branch rollout is calm again below the median
//   fork_entropy                          0.90  TRACE (EAGer): fork on the top 10 % of entropy
#ifndef ARBOR_TOOLS_EVAL_CALIBRATION_H_
#define ARBOR_TOOLS_EVAL_CALIBRATION_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "arbor/v1/entropix.pb.h"

namespace arbor::tools::eval {

// The step metrics collected, one value per step in each vector.
struct MetricSamples {
  std::vector<double> entropy, varentropy, attn_entropy, attn_varentropy, agreement,
      interaction_strength;

  void Add(const arbor::v1::Metrics& metrics);
  size_t size() const { return entropy.size(); }
  // Name → values, for printing.
  std::map<std::string, const std::vector<double>*> ByName() const;
};

// The q-quantile with linear interpolation between order statistics (the usual "type 7":
// position q·(n−1)); `values` need not be sorted. q in [0, 1]; empty → 0.
double Quantile(std::vector<double> values, double q);

// Threshold name → quantile, the defaults above with `overrides` ("key=q,key=q") applied.
// INVALID_ARGUMENT naming an unknown key or a q outside [0, 1].
absl::StatusOr<std::map<std::string, double>> CalibrationQuantiles(const std::string& overrides);

// The policy whose thresholds (and branch calm bounds) sit at `quantiles` of `samples`.
// FAILED_PRECONDITION with fewer than 100 steps (too few for tail quantiles).
absl::StatusOr<arbor::v1::PolicyConfig> CalibratedPolicy(
    const MetricSamples& samples, const std::map<std::string, double>& quantiles);

// A table of each metric's 5/25/50/75/90/95/99 % quantiles.
std::string QuantileTable(const MetricSamples& samples);

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_CALIBRATION_H_
