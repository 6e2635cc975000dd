// `arbor calibrate`: run the served model over task prompts (generating, plain sampling) or
// over text (teacher-forced scoring), collect every step's entropix metrics, print their
// quantiles and write a policy file with thresholds at chosen quantiles (tools/eval/calibration.h),
// for the coordinator's and workers' --policy_file or a request's policy. With
// --fit_temperature (tasks only) it also fits the sampling laws on the tasks (ADAPTIVE's
// temperature law, the quadrant rows' temperatures, min_p: tools/eval/policy_fit.h) and writes
// the chosen ones into the policy.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "policy/policy_file.h"
#include "tools/client.h"
#include "tools/commands.h"
#include "tools/eval/calibration.h"
#include "tools/eval/eval_runner.h"
#include "tools/eval/policy_fit.h"
#include "tools/eval/strategies.h"

ABSL_FLAG(std::string, text, "",
          "calibrate: a text file; each paragraph (blank-line separated) is scored "
          "teacher-forced instead of generating.");
ABSL_FLAG(std::string, quantiles, "",
          "calibrate: threshold=quantile overrides, comma-separated (defaults in `arbor "
          "calibrate --help` and docs/SEARCH_QUALITY.md).");
ABSL_FLAG(std::string, policy_out, "policy.json", "calibrate: the policy file to write.");
ABSL_FLAG(bool, fit_temperature, false,
          "calibrate --tasks: also fit the sampling laws by accuracy on the tasks (answering in "
          "--fit_mode), in three stages: ADAPTIVE's temperature law (base temperature and the "
          "weight of its uncertainty terms), the HELV/LEHV/HEHV rows' temperatures (caps and "
          "floor), min_p. Every candidate runs on the same items and seeds; a stage keeps what "
          "the policy had unless another candidate is more accurate by a paired exact McNemar "
          "test (p < 0.05).");
ABSL_FLAG(std::string, fit_mode, "canonical",
          "calibrate --fit_temperature: the policy mode the candidates answer in, canonical (the "
          "single-path sampler) or search (branching and backspacing draw from the rows' "
          "distributions too).");
ABSL_DECLARE_FLAG(std::string, tasks);
ABSL_DECLARE_FLAG(int, concurrency);
ABSL_DECLARE_FLAG(int, max_tokens);
ABSL_DECLARE_FLAG(uint64_t, seed);

namespace arbor::tools {
namespace {

using arbor::v1::Generation;

std::atomic<bool> never{false};

// Paragraphs of a text file, blank-line separated.
absl::StatusOr<std::vector<std::string>> Paragraphs(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> out;
  for (absl::string_view p : absl::StrSplit(text.str(), "\n\n", absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(p));
  }
  return out;
}

// The generation items of --tasks (multiple-choice items have no steps to collect).
absl::StatusOr<std::vector<eval::Task>> GenerationTasks() {
  ASSIGN_OR_RETURN(
      std::vector<eval::Task> tasks,
      eval::ReadTasks(absl::StrSplit(absl::GetFlag(FLAGS_tasks), ',', absl::SkipWhitespace())));
  std::erase_if(tasks, [](const eval::Task& task) { return !task.choices.empty(); });
  return tasks;
}

// Steps of the model sampling from each task's prompt (plain sampling, --seed).
absl::Status FromTasks(Generation::Stub& stub, const eval::EvalOptions& options,
                       const std::vector<eval::Task>& tasks, eval::MetricSamples& samples) {
  ASSIGN_OR_RETURN(std::vector<eval::Strategy> sample, eval::ParseStrategies("sample"));
  absl::Mutex mu;
  return eval::ParallelFor(tasks.size(), options.concurrency, never, [&](size_t i) {
    ASSIGN_OR_RETURN(
        eval::Sample generated,
        eval::GenerateSample(stub, tasks[i], sample.front().policy,
                             eval::SamplerSeed(tasks[i].id, absl::GetFlag(FLAGS_seed), 0), options,
                             "calibrate"));
    absl::MutexLock lock(&mu);
    for (const arbor::v1::Metrics& m : generated.metrics) samples.Add(m);
    return absl::OkStatus();
  });
}

// Steps of every token of each paragraph after its first word, teacher-forced.
absl::Status FromText(Generation::Stub& stub, const eval::EvalOptions& options,
                      eval::MetricSamples& samples) {
  ASSIGN_OR_RETURN(std::vector<std::string> paragraphs, Paragraphs(absl::GetFlag(FLAGS_text)));
  absl::Mutex mu;
  return eval::ParallelFor(paragraphs.size(), options.concurrency, never, [&](size_t i) {
    const std::string& paragraph = paragraphs[i];
    const size_t space = paragraph.find_first_of(" \n\t");
    if (space == std::string::npos) return absl::OkStatus();
    arbor::v1::ScoreRequest request;
    request.set_text(paragraph.substr(0, space));
    request.add_continuations()->set_text(paragraph.substr(space));
    arbor::v1::ScoreResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
    const grpc::Status status = stub.Score(&context, request, &response);
    if (!status.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          absl::StrCat("paragraph ", i + 1, ": ", status.error_message()));
    }
    absl::MutexLock lock(&mu);
    for (const arbor::v1::ScoredToken& token : response.continuations(0).tokens()) {
      samples.Add(token.metrics());
    }
    return absl::OkStatus();
  });
}

// Every policy answering every task once (in `mode`, the same sampler seed per task for every
// policy), scored by the task's own answer check.
absl::StatusOr<std::vector<eval::CandidateScore>> ScorePolicies(
    Generation::Stub& stub, const eval::EvalOptions& options, const std::vector<eval::Task>& tasks,
    const std::vector<arbor::v1::PolicyConfig>& policies, arbor::v1::PolicyMode mode) {
  std::vector<eval::CandidateScore> scores(policies.size());
  for (eval::CandidateScore& score : scores) score.right.assign(tasks.size(), false);
  std::vector<int> answered(policies.size(), 0);
  absl::Mutex mu;
  const absl::Status run =
      eval::ParallelFor(policies.size() * tasks.size(), options.concurrency, never, [&](size_t u) {
        const size_t p = u / tasks.size();
        const size_t t = u % tasks.size();
        const eval::Task& task = tasks[t];
        arbor::v1::PolicyConfig candidate = policies[p];
        candidate.set_mode(mode);
        ASSIGN_OR_RETURN(
            eval::Sample sample,
            eval::GenerateSample(stub, task, candidate,
                                 eval::SamplerSeed(task.id, absl::GetFlag(FLAGS_seed), 0), options,
                                 "calibrate-fit"));
        const bool correct = eval::AnswerMatches(task, eval::ExtractAnswer(task, sample.text));
        absl::MutexLock lock(&mu);
        eval::CandidateScore& score = scores[p];
        score.mean_logprob += (sample.mean_logprob - score.mean_logprob) / (answered[p] + 1);
        ++answered[p];
        score.right[t] = correct;
        return absl::OkStatus();
      });
  if (!run.ok()) return run;
  return scores;
}

absl::StatusOr<arbor::v1::PolicyMode> FitMode(absl::string_view name) {
  if (name == "canonical") return arbor::v1::POLICY_MODE_CANONICAL;
  if (name == "search") return arbor::v1::POLICY_MODE_SEARCH;
  return absl::InvalidArgumentError(absl::StrCat(
      "--fit_mode: '", name, "' is not a mode the fit answers in (canonical, search)"));
}

}  // namespace

int RunCalibrate(const Args& args) {
  const bool text = !absl::GetFlag(FLAGS_text).empty();
  const bool fit = absl::GetFlag(FLAGS_fit_temperature);
  if (!args.empty() || text == !absl::GetFlag(FLAGS_tasks).empty() || (fit && text)) {
    std::cerr << "usage: arbor calibrate (--tasks FILES [--fit_temperature] | --text FILE) "
                 "[--policy_out FILE] [--quantiles key=q,...]\n";
    return 2;
  }
  absl::StatusOr<std::map<std::string, double>> quantiles =
      eval::CalibrationQuantiles(absl::GetFlag(FLAGS_quantiles));
  if (!quantiles.ok()) {
    std::cerr << "arbor calibrate: " << quantiles.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<arbor::v1::PolicyMode> fit_mode = FitMode(absl::GetFlag(FLAGS_fit_mode));
  if (!fit_mode.ok()) {
    std::cerr << "arbor calibrate: " << fit_mode.status().message() << "\n";
    return 2;
  }
  eval::EvalOptions options;
  options.coordinator = ClientOptionsFromFlags().coordinator;
  if (absl::GetFlag(FLAGS_max_tokens) > 0) options.max_tokens = absl::GetFlag(FLAGS_max_tokens);
  options.concurrency = absl::GetFlag(FLAGS_concurrency);
  auto stub = Generation::NewStub(Connect(options.coordinator));
  std::vector<eval::Task> tasks;
  if (!text) {
    absl::StatusOr<std::vector<eval::Task>> read = GenerationTasks();
    if (!read.ok()) {
      std::cerr << "arbor calibrate: " << read.status() << "\n";
      return 1;
    }
    tasks = *std::move(read);
  }
  eval::MetricSamples samples;
  const absl::Status collected =
      text ? FromText(*stub, options, samples) : FromTasks(*stub, options, tasks, samples);
  if (!collected.ok()) {
    std::cerr << "arbor calibrate: " << collected << "\n";
    return 1;
  }
  std::cout << eval::QuantileTable(samples);
  absl::StatusOr<arbor::v1::PolicyConfig> policy = eval::CalibratedPolicy(samples, *quantiles);
  if (!policy.ok()) {
    std::cerr << "arbor calibrate: " << policy.status().message() << "\n";
    return 1;
  }
  if (fit) {
    std::cout << "\nfitting the sampling laws on " << tasks.size()
              << " tasks, one stage at a time ...\n";
    const absl::Status fitted = eval::FitPolicy(
        samples,
        [&](const std::vector<arbor::v1::PolicyConfig>& policies) {
          return ScorePolicies(*stub, options, tasks, policies, *fit_mode);
        },
        [](const std::string& table) { std::cout << "\n"
                                                 << table << std::flush; }, *policy);
    if (!fitted.ok()) {
      std::cerr << "arbor calibrate: " << fitted << "\n";
      return 1;
    }
  }
  const std::string out = absl::GetFlag(FLAGS_policy_out);
  if (absl::Status written = policy::WritePolicyFile(*policy, out); !written.ok()) {
    std::cerr << "arbor calibrate: " << written.message() << "\n";
    return 1;
  }
  std::cout << (fit ? "\nthresholds at quantiles, and the fitted sampling laws:\n"
                    : "\nthresholds at quantiles:\n")
            << ToJson(*policy) << "\nwritten to " << out
            << " (load it with --policy_file on the coordinator, or as a strategy's "
               "policy_file in arbor eval)\n";
  return 0;
}

}  // namespace arbor::tools
