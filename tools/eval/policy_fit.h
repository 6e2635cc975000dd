// Fitting the sampling half of the policy to the served model (`arbor calibrate
// --fit_temperature`). The published laws were set for Llama 3: ADAPTIVE samples at
// T = T0·(1 + 0.3·(H+V) + 0.2·(attn_ent+attn_vent) − 0.2·agreement) with T0 0.666, HEHV at no
// less than T 2.0 whatever T0 is, and min_p shrinks with uncertainty to a 0.01 floor. On a small
// model whose steps carry several bits of entropy that samples at T ≈ 2–3 and derails
// (docs/SEARCH_QUALITY.md); thresholds cannot fix it. The fit is a coordinate descent in three
// stages, each trying a few candidates on the calibration tasks (the same items and sampler seeds
// for every candidate) over the policy the earlier stages chose:
//   1. ADAPTIVE's temperature law: T0 ∈ {0.666, 0.4, 0.2} × the weight of its uncertainty terms
//      ∈ {1, 1/3, 0};
//   2. the quadrant rows (HELV, LEHV, HEHV): as published, their caps and HEHV's floor scaled
//      with T0, every row at T0, every row at T0/2;
//   3. min_p: as published (adaptive down to its floor), or fixed at 0.05, 0.1 or 0.2.
// A stage replaces what the policy had only with a candidate that is more accurate by a paired
// exact McNemar test on the same items (p < kFitSignificance): 160 items cannot tell one item's
// difference from noise, and a fit that followed noise would ship it. Among such candidates the
// most accurate wins, likelihood breaking ties.
#ifndef ARBOR_TOOLS_EVAL_POLICY_FIT_H_
#define ARBOR_TOOLS_EVAL_POLICY_FIT_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arbor/v1/entropix.pb.h"
#include "tools/eval/calibration.h"

namespace arbor::tools::eval {

// One candidate of a stage: its name and how it changes the policy the earlier stages chose.
struct FitCandidate {
  std::string name;
  std::function<void(arbor::v1::PolicyConfig&)> apply;
};

struct FitStage {
  std::string name;
  std::vector<FitCandidate> candidates;  // The first is the incumbent: it may change nothing.
};

// The three stages above, in order.
std::vector<FitStage> PolicyFitStages();

inline constexpr double kFitSignificance = 0.05;

// What one candidate scored on the calibration tasks.
struct CandidateScore {
  std::vector<bool> right;    // Per task, in the tasks' order: answered correctly.
  double mean_logprob = 0.0;  // Per committed token, averaged over answers.
  int answers() const { return static_cast<int>(right.size()); }
  int correct() const;
  double accuracy() const;
};

// Index of the candidate to keep: among those more accurate than the incumbent (index 0) by the
// paired test above, the most accurate, then the most likely; 0 when there is none. `scores`
// must be non-empty, each over the same tasks.
size_t ChooseCandidate(absl::Span<const CandidateScore> scores);

// Scores whole policies (CANONICAL mode is the scorer's to set) on the calibration tasks, one
// score per policy, in order.
using PolicyScorer = std::function<absl::StatusOr<std::vector<CandidateScore>>(
    const std::vector<arbor::v1::PolicyConfig>&)>;

// Runs the stages over `policy` and leaves the chosen candidates applied to it. A candidate that
// leaves the policy as the incumbent has it is not scored again, and the incumbent of a later
// stage carries its score from the stage before (same items and seeds give the same answers).
// `report` receives each stage's table as it finishes.
absl::Status FitPolicy(const MetricSamples& samples, const PolicyScorer& score,
                       const std::function<void(const std::string&)>& report,
                       arbor::v1::PolicyConfig& policy);

// The q-quantile over the collected steps of the temperature, or the min_p, the CANONICAL
// sampler uses under `policy`: each step in the row its thresholds select, with that row's
// parameters (entropix's own formulas).
enum class SamplingField { kTemperature, kMinP };
absl::StatusOr<double> SamplingQuantile(const MetricSamples& samples,
                                        const arbor::v1::PolicyConfig& policy, SamplingField field,
                                        double q);

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_POLICY_FIT_H_
