// What an evaluation found, from its results log: per strategy the accuracy with a 95 %
// confidence interval, the paired difference against the baseline (greedy) with its tests, and
// the compute spent (generated and explored tokens per answer, wall time); per family the
// accuracies. Rendered as a terminal table, as JSON and as a PNG plot of accuracy against tokens.
//
// Statistics: an item's score for a strategy is its accuracy averaged over the seeds, so the
// item is the unit of sampling (answers to one item under different seeds are not independent).
// Accuracy CIs, overall and per family, are Wilson intervals when each item has one 0/1 answer,
// else Student-t intervals over item scores clipped to [0, 1]; the difference against the
// baseline is a paired bootstrap over items (10 000 resamples, fixed seed), with an exact McNemar
// test on the first seed's answers as a second opinion (one answer per item, so its pairs are
// independent). Only items with every answer in are counted, so all strategies are compared on
// the same items.
#ifndef ARBOR_TOOLS_EVAL_EVAL_REPORT_H_
#define ARBOR_TOOLS_EVAL_EVAL_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "tools/eval/report/stats.h"
#include "tools/eval/results_log.h"
#include "tools/eval/strategies.h"
#include "tools/eval/task_file.h"

namespace arbor::tools::eval {

// The names of the accuracy intervals, as reports and their JSON give them.
inline constexpr char kWilson[] = "wilson";
inline constexpr char kClippedT[] = "student_t_clipped";

struct StrategyReport {
  std::string strategy;
  int items = 0;
  Interval accuracy;
  std::string accuracy_method;  // kWilson or kClippedT; the families' intervals use it too.
  std::vector<double> seed_accuracy;  // Per seed, in seed order (one value when deterministic).
  double generated_tokens = 0;        // Per answer, means.
  double explored_tokens = 0;
  Interval tokens;  // generated + explored per answer, with a CI over items.
  double wall_s = 0;
  // Against the baseline (absent for the baseline itself and for loglik).
  std::optional<PairedDifference> vs_baseline;
  int64_t mcnemar_better = 0, mcnemar_worse = 0;  // First-seed discordant pairs.
  double mcnemar_p = 1;
  std::map<std::string, Interval> by_family;
};

struct EvalReport {
  int generation_items = 0;  // Complete, of generation_items_total.
  int generation_items_total = 0;
  int choice_items = 0;
  std::string baseline;  // Label of the strategy differences are taken against.
  std::vector<uint64_t> seeds;
  std::vector<StrategyReport> strategies;  // In the order given, loglik last.
};

EvalReport BuildReport(const std::vector<Task>& tasks, const std::vector<Strategy>& strategies,
                       const std::vector<uint64_t>& seeds, const std::vector<Outcome>& outcomes);

std::string ReportTable(const EvalReport& report);
nlohmann::json ReportJson(const EvalReport& report);
// Accuracy (with its CI) against tokens per answer, one point per strategy, log x axis.
absl::Status WriteReportPlot(const EvalReport& report, const std::string& path);

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_EVAL_REPORT_H_
