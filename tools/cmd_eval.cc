// `arbor eval`: compare decoding strategies on task files against a running coordinator
// (tools/eval/), or find each task family's useful difficulty (--calibrate_difficulty); and
// `arbor tasks`: write generated task files.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <iostream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "tools/client.h"
#include "tools/commands.h"
#include "tools/eval/eval_report.h"
#include "tools/eval/eval_runner.h"
#include "tools/eval/tasks/task_generators.h"

ABSL_FLAG(std::string, tasks, "",
          "eval/calibrate: task files (JSON Lines, comma-separated; format in "
          "tools/eval/tasks/README.md; GSM8K lines are read too).");
ABSL_FLAG(std::string, strategies,
          "greedy,sample,best_of_n:n=4,self_consistency:n=5,canonical,search",
          "eval: strategies to compare, comma-separated, options after colons: greedy; "
          "sample[:temperature=T:min_p=P:top_p=P:top_k=K]; best_of_n[:n=N:...]; "
          "self_consistency[:n=N:...]; canonical[:policy_file=F]; "
          "search[:policy_file=F:width=W:max_len=L]; "
          "cot_decoding[:k=K:candidate_min_p=P:traces=N:budget=TOKENS:aggregate=0|1:"
          "policy_file=F]; "
          "eager[:theta=H:depth=D:...as cot_decoding]; "
          "deepconf[:k=TRACES:temperature=T:warmup=N:keep=F:window=W:...]; any[:label=NAME].");
ABSL_FLAG(std::string, seeds, "1,2,3",
          "eval: sampler seeds, comma-separated; every stochastic strategy answers every item once "
          "per seed (paired across strategies).");
ABSL_FLAG(std::string, results, "",
          "eval: results file (JSON Lines, appended per answer); running the same command again "
          "resumes from it. Required.");
ABSL_FLAG(std::string, report, "", "eval: report JSON path (default: RESULTS.report.json).");
ABSL_FLAG(std::string, plot, "",
          "eval: accuracy-vs-tokens plot path, SVG (default: RESULTS.svg).");
ABSL_FLAG(int, concurrency, 4, "eval/calibrate: answers in flight at once.");
ABSL_FLAG(bool, calibrate_difficulty, false,
          "eval: instead of comparing, find per family the level where greedy accuracy is in "
          "[20%, 80%] (--families, --count items per level, --seed, --results).");
ABSL_FLAG(std::string, families, "",
          "eval --calibrate_difficulty / tasks: families, comma-separated (default: all).");
ABSL_FLAG(std::string, family, "", "tasks: the family to generate ('all': every family).");
ABSL_FLAG(int, level, 1, "tasks: difficulty level (1 = easiest).");
ABSL_FLAG(int, count, 100, "tasks / eval --calibrate_difficulty: items per family and level.");
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(int, max_tokens);

namespace arbor::tools {
namespace {

std::atomic<bool> interrupted{false};

void OnInterrupt(int) {
  interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);  // A second Ctrl-C ends the process at once.
}

absl::StatusOr<std::vector<uint64_t>> ParseSeeds(const std::string& list) {
  std::vector<uint64_t> seeds;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    uint64_t seed = 0;
    if (!absl::SimpleAtoi(part, &seed) || seed == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--seeds: '", part, "' is not a positive integer"));
    }
    seeds.push_back(seed);
  }
  if (seeds.empty()) return absl::InvalidArgumentError("--seeds: empty");
  return seeds;
}

std::vector<std::string> Families() {
  const std::string list = absl::GetFlag(FLAGS_families);
  if (list.empty()) return eval::TaskFamilies();
  return absl::StrSplit(list, ',', absl::SkipWhitespace());
}

eval::EvalOptions OptionsFromFlags(const std::vector<uint64_t>& seeds) {
  eval::EvalOptions options;
  options.coordinator = ClientOptionsFromFlags().coordinator;
  options.seeds = seeds;
  if (absl::GetFlag(FLAGS_max_tokens) > 0) options.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  options.concurrency = absl::GetFlag(FLAGS_concurrency);
  options.terminal = isatty(STDERR_FILENO);
  return options;
}

std::vector<eval::Task> ToTasks(const std::vector<nlohmann::json>& lines) {
  std::vector<eval::Task> tasks;
  for (const nlohmann::json& line : lines) {
    absl::StatusOr<eval::Task> task = eval::ParseTask(line.dump(), "generated");
    if (task.ok()) tasks.push_back(*std::move(task));
  }
  return tasks;
}

// Runs `units`, reporting an interruption; 0, 1 (error) or 130 (interrupted).
int RunAll(const std::vector<eval::Unit>& units, const eval::EvalOptions& options,
           eval::ResultsLog& log) {
  std::signal(SIGINT, OnInterrupt);
  const absl::Status status = eval::RunUnits(units, options, log, interrupted, std::cerr);
  std::signal(SIGINT, SIG_DFL);
  if (!status.ok()) {
    std::cerr << "arbor eval: " << status << "\n";
    return 1;
  }
  if (interrupted.load()) {
    std::cerr << "arbor eval: interrupted; the answers so far are saved: run the same command "
                 "to resume\n";
    return 130;
  }
  return 0;
}

// Greedy accuracy per family and level on --count items per level (seed --seed), from level 1
// up until accuracy falls to 80 % or below; the first level in [20 %, 80 %] is chosen, else the
// level whose accuracy is closest to 50 %.
int CalibrateDifficulty(eval::ResultsLog& log, const eval::EvalOptions& options) {
  absl::StatusOr<std::vector<eval::Strategy>> greedy = eval::ParseStrategies("greedy");
  const uint64_t seed = std::max<uint64_t>(absl::GetFlag(FLAGS_seed), 1);
  std::cout << absl::StrFormat("%-16s %6s %10s\n", "family", "level", "greedy");
  for (const std::string& family : Families()) {
    absl::StatusOr<int> max_level = eval::MaxLevel(family);
    if (!max_level.ok()) {
      std::cerr << "arbor eval: --families: " << max_level.status().message() << "\n";
      return 2;
    }
    int chosen = 0;
    double chosen_distance = 2;
    for (int level = 1; level <= *max_level; ++level) {
      absl::StatusOr<std::vector<nlohmann::json>> lines =
          eval::GenerateTasks(family, level, absl::GetFlag(FLAGS_count), seed);
      if (!lines.ok()) {
        std::cerr << "arbor eval: " << lines.status() << "\n";
        return 2;
      }
      const std::vector<eval::Task> tasks = ToTasks(*lines);
      if (const int code =
              RunAll(eval::PendingUnits(tasks, *greedy, options.seeds, log), options, log);
          code != 0) {
        return code;
      }
      const eval::EvalReport report =
          eval::BuildReport(tasks, *greedy, options.seeds, log.outcomes());
      const double accuracy =
          report.strategies.empty() ? 0 : report.strategies.front().accuracy.estimate;
      std::cout << absl::StrFormat("%-16s %6d %9.1f%%\n", family, level, 100 * accuracy)
                << std::flush;
      const double distance = std::abs(accuracy - 0.5);
      const bool in_band = accuracy >= 0.2 && accuracy <= 0.8;
      if (in_band || distance < chosen_distance) {
        chosen = level;
        chosen_distance = in_band ? -1 : distance;
      }
      if (in_band || accuracy < 0.2) break;
    }
    std::cout << absl::StrFormat("%-16s chosen level %d\n", family, chosen);
  }
  return 0;
}

int Evaluate(eval::ResultsLog& log, const eval::EvalOptions& options,
             const std::string& results_path) {
  const std::string task_list = absl::GetFlag(FLAGS_tasks);
  if (task_list.empty()) {
    std::cerr << "arbor eval: --tasks: give task files (write some with `arbor tasks`)\n";
    return 2;
  }
  absl::StatusOr<std::vector<eval::Task>> tasks =
      eval::ReadTasks(absl::StrSplit(task_list, ',', absl::SkipWhitespace()));
  absl::StatusOr<std::vector<eval::Strategy>> strategies =
      eval::ParseStrategies(absl::GetFlag(FLAGS_strategies));
  for (const absl::Status& status : {tasks.status(), strategies.status()}) {
    if (!status.ok()) {
      std::cerr << "arbor eval: " << status.message() << "\n";
      return 2;
    }
  }
  const std::vector<eval::Unit> units = eval::PendingUnits(*tasks, *strategies, options.seeds, log);
  std::cerr << absl::StrFormat(
      "arbor eval: %d items, %d strategies, %d seeds: %d answers to "
      "compute, %d already in %s\n",
      tasks->size(), strategies->size(), options.seeds.size(), units.size(), log.outcomes().size(),
      results_path);
  const int code = RunAll(units, options, log);
  const eval::EvalReport report =
      eval::BuildReport(*tasks, *strategies, options.seeds, log.outcomes());
  std::cout << eval::ReportTable(report);
  std::string report_path = absl::GetFlag(FLAGS_report);
  if (report_path.empty()) report_path = results_path + ".report.json";
  std::ofstream(report_path) << eval::ReportJson(report).dump(2) << "\n";
  std::string plot_path = absl::GetFlag(FLAGS_plot);
  if (plot_path.empty()) plot_path = results_path + ".svg";
  if (absl::Status plotted = eval::WriteReportPlot(report, plot_path); !plotted.ok()) {
    std::cerr << "arbor eval: " << plotted.message() << "\n";
    return 1;
  }
  std::cout << "\nreport: " << report_path << "\nplot: " << plot_path << "\n";
  return code;
}

}  // namespace

int RunEval(const Args& args) {
  if (!args.empty()) {
    std::cerr << "usage: arbor eval --tasks FILES --results FILE [--strategies LIST] [--seeds "
                 "LIST] | --calibrate_difficulty --results FILE [--families LIST]\n";
    return 2;
  }
  const std::string results_path = absl::GetFlag(FLAGS_results);
  if (results_path.empty()) {
    std::cerr << "arbor eval: --results: give a results file (created if absent; an existing one "
                 "is resumed)\n";
    return 2;
  }
  absl::StatusOr<std::vector<uint64_t>> seeds = ParseSeeds(absl::GetFlag(FLAGS_seeds));
  if (!seeds.ok()) {
    std::cerr << "arbor eval: " << seeds.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<std::unique_ptr<eval::ResultsLog>> log = eval::ResultsLog::Open(results_path);
  if (!log.ok()) {
    std::cerr << "arbor eval: " << log.status().message() << "\n";
    return 1;
  }
  const eval::EvalOptions options = OptionsFromFlags(*seeds);
  if (absl::GetFlag(FLAGS_calibrate_difficulty)) return CalibrateDifficulty(**log, options);
  return Evaluate(**log, options, results_path);
}

int RunTasks(const Args& args) {
  const std::string family = absl::GetFlag(FLAGS_family);
  const std::string out_path = absl::GetFlag(FLAGS_out);
  if (!args.empty() || family.empty() || out_path.empty()) {
    std::cerr << "usage: arbor tasks --family F|all --level L --count N --seed S --out FILE\n";
    return 2;
  }
  const std::vector<std::string> families =
      family == "all" ? eval::TaskFamilies() : std::vector<std::string>{family};
  std::ofstream out(out_path);
  for (const std::string& name : families) {
    absl::StatusOr<std::vector<nlohmann::json>> lines =
        eval::GenerateTasks(name, absl::GetFlag(FLAGS_level), absl::GetFlag(FLAGS_count),
                            std::max<uint64_t>(absl::GetFlag(FLAGS_seed), 1));
    if (!lines.ok()) {
      std::cerr << "arbor tasks: " << lines.status().message() << "\n";
      return 2;
    }
    for (const nlohmann::json& line : *lines) out << line.dump() << "\n";
  }
  if (!out.flush()) {
    std::cerr << "arbor tasks: --out: cannot write " << out_path << "\n";
    return 1;
  }
  return 0;
}

}  // namespace arbor::tools
