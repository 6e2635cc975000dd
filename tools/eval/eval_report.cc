#include "tools/eval/eval_report.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/eval/eval_runner.h"
#include "tools/eval/report/svg_plot.h"

namespace arbor::tools::eval {
namespace {

constexpr int kBootstrapResamples = 10000;
constexpr uint64_t kBootstrapSeed = 1;

// The answers of one strategy, by item and seed.
using Answers = absl::flat_hash_map<std::string, absl::flat_hash_map<uint64_t, const Outcome*>>;

// The answer that stands for (item, seed): a deterministic strategy's one answer (seed 0).
const Outcome* Find(const Answers& answers, const std::string& item, uint64_t seed) {
  auto it = answers.find(item);
  if (it == answers.end()) return nullptr;
  auto at = it->second.find(seed);
  if (at == it->second.end()) at = it->second.find(0);
  return at == it->second.end() ? nullptr : at->second;
}

struct Column {
  std::string label;
  bool deterministic = false;
  Answers answers;
};

// Item score (accuracy over seeds) and the answers behind it; false when one is missing.
bool ItemAnswers(const Column& column, const std::string& item, const std::vector<uint64_t>& seeds,
                 std::vector<const Outcome*>& out) {
  out.clear();
  for (uint64_t seed : column.deterministic ? std::vector<uint64_t>{0} : seeds) {
    const Outcome* outcome = Find(column.answers, item, seed);
    if (outcome == nullptr) return false;
    out.push_back(outcome);
  }
  return true;
}

// The accuracy interval of item `scores` and the method's name (kWilson, kClippedT): with one 0/1
// answer per item the scores are a proportion and get Wilson's interval, which never leaves
// [0, 1]; averaged over seeds they are not 0/1, so they get the Student-t interval of their mean,
// clipped to [0, 1] where few items or little spread would push it past the possible range.
Interval AccuracyInterval(const std::vector<double>& scores, bool one_answer_per_item,
                          std::string* method) {
  if (one_answer_per_item) {
    *method = kWilson;
    int64_t correct = 0;
    for (double score : scores) correct += score > 0.5;
    return WilsonInterval(correct, static_cast<int64_t>(scores.size()));
  }
  *method = kClippedT;
  Interval interval = MeanInterval(scores);
  interval.lo = std::clamp(interval.lo, 0.0, 1.0);
  interval.hi = std::clamp(interval.hi, 0.0, 1.0);
  return interval;
}

double Score(const std::vector<const Outcome*>& answers) {
  double correct = 0;
  for (const Outcome* o : answers) correct += o->correct;
  return correct / static_cast<double>(answers.size());
}

StrategyReport Summarize(const Column& column, const std::vector<const Task*>& items,
                         const std::vector<uint64_t>& seeds) {
  StrategyReport r;
  r.strategy = column.label;
  r.items = static_cast<int>(items.size());
  std::vector<double> scores, tokens;
  std::map<std::string, std::vector<double>> families;
  double generated = 0, explored = 0, wall = 0, answers = 0;
  const size_t per_item = column.deterministic ? 1 : seeds.size();
  std::vector<double> seed_correct(per_item, 0);
  std::vector<const Outcome*> item_answers;
  for (const Task* task : items) {
    ItemAnswers(column, task->id, seeds, item_answers);
    scores.push_back(Score(item_answers));
    families[task->family].push_back(scores.back());
    double item_tokens = 0;
    for (size_t s = 0; s < item_answers.size(); ++s) {
      const Outcome* o = item_answers[s];
      seed_correct[s] += o->correct;
      generated += static_cast<double>(o->generated_tokens);
      explored += static_cast<double>(o->explored_tokens);
      item_tokens += static_cast<double>(o->generated_tokens + o->explored_tokens);
      wall += o->wall_s;
      ++answers;
    }
    tokens.push_back(item_tokens / static_cast<double>(item_answers.size()));
  }
  r.accuracy = AccuracyInterval(scores, per_item == 1, &r.accuracy_method);
  r.tokens = MeanInterval(tokens);
  for (double correct : seed_correct) {
    r.seed_accuracy.push_back(items.empty() ? 0 : correct / static_cast<double>(items.size()));
  }
  if (answers > 0) {
    r.generated_tokens = generated / answers;
    r.explored_tokens = explored / answers;
    r.wall_s = wall / answers;
  }
  std::string method;
  for (const auto& [family, values] : families) {
    r.by_family[family] = AccuracyInterval(values, per_item == 1, &method);
  }
  return r;
}

void CompareWithBaseline(const Column& column, const Column& baseline,
                         const std::vector<const Task*>& items, const std::vector<uint64_t>& seeds,
                         StrategyReport& r) {
  std::vector<double> a, b;
  std::vector<const Outcome*> answers;
  for (const Task* task : items) {
    ItemAnswers(column, task->id, seeds, answers);
    a.push_back(Score(answers));
    ItemAnswers(baseline, task->id, seeds, answers);
    b.push_back(Score(answers));
    const uint64_t first = seeds.empty() ? 0 : seeds.front();
    const bool mine = Find(column.answers, task->id, first)->correct;
    const bool theirs = Find(baseline.answers, task->id, first)->correct;
    r.mcnemar_better += mine && !theirs;
    r.mcnemar_worse += !mine && theirs;
  }
  absl::StatusOr<PairedDifference> difference =
      PairedBootstrap(a, b, kBootstrapResamples, kBootstrapSeed);
  if (difference.ok()) r.vs_baseline = *difference;
  r.mcnemar_p = McNemarExactP(r.mcnemar_better, r.mcnemar_worse);
}

nlohmann::json IntervalJson(const Interval& i) {
  return {{"estimate", i.estimate}, {"lo", i.lo}, {"hi", i.hi}};
}

}  // namespace

EvalReport BuildReport(const std::vector<Task>& tasks, const std::vector<Strategy>& strategies,
                       const std::vector<uint64_t>& seeds, const std::vector<Outcome>& outcomes) {
  EvalReport report;
  report.seeds = seeds;
  std::vector<Column> columns(strategies.size());
  absl::flat_hash_map<std::string, size_t> column_of;
  for (size_t i = 0; i < strategies.size(); ++i) {
    columns[i].label = strategies[i].label;
    columns[i].deterministic = strategies[i].deterministic();
    column_of[strategies[i].label] = i;
  }
  Column loglik{kLoglikStrategy, true, {}};
  for (const Outcome& o : outcomes) {
    if (o.strategy == kLoglikStrategy) {
      loglik.answers[o.item][o.seed] = &o;
    } else if (auto it = column_of.find(o.strategy); it != column_of.end()) {
      columns[it->second].answers[o.item][o.seed] = &o;
    }
  }
  // The items every strategy has answered for every seed.
  std::vector<const Task*> generation, choice;
  std::vector<const Outcome*> scratch;
  for (const Task& task : tasks) {
    if (!task.choices.empty()) {
      if (Find(loglik.answers, task.id, 0) != nullptr) choice.push_back(&task);
      continue;
    }
    ++report.generation_items_total;
    if (std::all_of(columns.begin(), columns.end(),
                    [&](const Column& c) { return ItemAnswers(c, task.id, seeds, scratch); })) {
      generation.push_back(&task);
    }
  }
  report.generation_items = static_cast<int>(generation.size());
  report.choice_items = static_cast<int>(choice.size());
  size_t baseline = 0;
  for (size_t i = 0; i < strategies.size(); ++i) {
    if (strategies[i].kind == StrategyKind::kGreedy) {
      baseline = i;
      break;
    }
  }
  if (!columns.empty()) report.baseline = columns[baseline].label;
  if (!generation.empty()) {
    for (size_t i = 0; i < columns.size(); ++i) {
      StrategyReport r = Summarize(columns[i], generation, seeds);
      if (i != baseline) CompareWithBaseline(columns[i], columns[baseline], generation, seeds, r);
      report.strategies.push_back(std::move(r));
    }
  }
  if (!choice.empty()) report.strategies.push_back(Summarize(loglik, choice, seeds));
  return report;
}

std::string ReportTable(const EvalReport& report) {
  std::string out = absl::StrFormat(
      "%d of %d generation items complete × %d seeds; %d multiple-choice items (loglik)\n\n",
      report.generation_items, report.generation_items_total, report.seeds.size(),
      report.choice_items);
  absl::StrAppendFormat(&out, "%-28s %6s %22s %24s %8s %10s %10s %8s\n", "strategy", "items",
                        "accuracy [95% CI]", absl::StrCat("vs ", report.baseline, " [95% CI]"), "p",
                        "gen tok", "expl tok", "s/ans");
  for (const StrategyReport& r : report.strategies) {
    std::string versus = "—", p = "";
    if (r.vs_baseline) {
      versus = absl::StrFormat("%+.3f [%+.3f, %+.3f]", r.vs_baseline->mean, r.vs_baseline->lo,
                               r.vs_baseline->hi);
      // With 10 000 resamples, 0 means below 1e-4.
      p = r.vs_baseline->p_value > 0 ? absl::StrFormat("%.3g", r.vs_baseline->p_value) : "<1e-4";
    }
    absl::StrAppendFormat(
        &out, "%-28s %6d %22s %24s %8s %10.1f %10.1f %8.2f\n", r.strategy, r.items,
        absl::StrFormat("%.3f [%.3f, %.3f]", r.accuracy.estimate, r.accuracy.lo, r.accuracy.hi),
        versus, p, r.generated_tokens, r.explored_tokens, r.wall_s);
  }
  out += "\nBy family (accuracy):\n";
  for (const StrategyReport& r : report.strategies) {
    absl::StrAppendFormat(&out, "  %-28s", r.strategy);
    for (const auto& [family, accuracy] : r.by_family) {
      absl::StrAppendFormat(&out, " %s %.3f", family, accuracy.estimate);
    }
    out += "\n";
  }
  absl::StrAppend(&out, "\nAccuracy intervals (95%, by family too): ", kWilson,
                  " with one answer per item; ", kClippedT,
                  " (Student-t over item scores averaged over seeds, clipped to [0, 1]) with "
                  "several.\n");
  return out;
}

nlohmann::json ReportJson(const EvalReport& report) {
  nlohmann::json strategies = nlohmann::json::array();
  for (const StrategyReport& r : report.strategies) {
    nlohmann::json s = {{"strategy", r.strategy},
                        {"items", r.items},
                        {"accuracy", IntervalJson(r.accuracy)},
                        {"accuracy_interval", r.accuracy_method},
                        {"seed_accuracy", r.seed_accuracy},
                        {"generated_tokens_per_answer", r.generated_tokens},
                        {"explored_tokens_per_answer", r.explored_tokens},
                        {"tokens_per_answer", IntervalJson(r.tokens)},
                        {"wall_s_per_answer", r.wall_s}};
    if (r.vs_baseline) {
      s["vs_baseline"] = {{"mean", r.vs_baseline->mean},
                          {"lo", r.vs_baseline->lo},
                          {"hi", r.vs_baseline->hi},
                          {"bootstrap_p", r.vs_baseline->p_value},
                          {"mcnemar_better", r.mcnemar_better},
                          {"mcnemar_worse", r.mcnemar_worse},
                          {"mcnemar_p", r.mcnemar_p}};
    }
    for (const auto& [family, accuracy] : r.by_family) {
      s["by_family"][family] = IntervalJson(accuracy);
    }
    strategies.push_back(std::move(s));
  }
  return {{"generation_items", report.generation_items},
          {"generation_items_total", report.generation_items_total},
          {"choice_items", report.choice_items},
          {"seeds", report.seeds},
          {"baseline", report.baseline},
          {"strategies", strategies}};
}

absl::Status WriteReportPlot(const EvalReport& report, const std::string& path) {
  Plot plot;
  plot.title = "Accuracy against compute";
  plot.x_label = "tokens per answer (generated + explored)";
  plot.y_label = "accuracy (95% CI)";
  plot.log_x = true;
  for (const StrategyReport& r : report.strategies) {
    const double x = std::max(r.tokens.estimate, 1.0);
    plot.series.push_back({r.strategy, {{x, r.accuracy.estimate, r.accuracy.lo, r.accuracy.hi}}});
  }
  return WritePlotSvg(plot, path);
}

}  // namespace arbor::tools::eval
