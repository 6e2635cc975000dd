#include "tools/eval/eval_runner.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "base/status_macros.h"
#include "rpc/security.h"
#include "tools/eval/report/stats.h"
#include "tools/eval/task_prompt.h"

namespace arbor::tools::eval {
namespace {

using arbor::v1::Generation;

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// Errors that belong to the item (its prompt does not fit, …): recorded as a wrong answer.
// Anything else (the coordinator gone) stops the run.
bool ItemError(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ||
         status.code() == absl::StatusCode::kFailedPrecondition ||
         status.code() == absl::StatusCode::kOutOfRange;
}

std::unique_ptr<grpc::ClientContext> Context(absl::Duration timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  return context;
}

}  // namespace

uint64_t SamplerSeed(const std::string& item_id, uint64_t seed, int sample) {
  // FNV-1a over the id, then two rounds of the SplitMix64 finaliser to mix in the seeds; stable
  // across builds and machines, so a resumed run draws what the interrupted one would have.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : item_id) h = (h ^ c) * 0x100000001b3ull;
  for (uint64_t v : {seed, static_cast<uint64_t>(sample)}) {
    h += v + 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
  }
  return h == 0 ? 1 : h;
}

absl::StatusOr<Sample> GenerateSample(arbor::v1::Generation::Stub& stub, const Task& task,
                                      const arbor::v1::PolicyConfig& policy, uint64_t seed,
                                      const EvalOptions& options, const std::string& tag) {
  arbor::v1::GenerateRequest request;
  SetPrompt(task, request);
  request.set_max_tokens(task.max_tokens > 0 ? task.max_tokens : options.max_tokens);
  request.set_seed(seed);
  *request.mutable_policy() = policy;
  if (policy.mode() == arbor::v1::POLICY_MODE_TRACE) {
    // The server picks among traces by the answer, so it extracts it as this harness does.
    request.mutable_policy()->mutable_trace()->set_answer_pattern(AnswerPatternSource(task));
  }
  request.set_client_tag(absl::StrCat(tag, " ", task.id).substr(0, 256));
  auto context = Context(options.timeout);
  auto reader = stub.Generate(context.get(), request);
  arbor::v1::GenerateEvent event;
  std::string job_id;
  double logprob = 0;
  int64_t tokens = 0;
  std::string last_piece;
  bool stop_token = false;
  Sample sample;
  while (reader->Read(&event)) {
    job_id = event.job_id();
    if (event.has_token()) {
      logprob += event.token().logprob();
      ++tokens;
      sample.metrics.push_back(event.token().metrics());
      last_piece = event.token().text();
    } else if (event.has_finished()) {
      stop_token = event.finished().reason() == arbor::v1::FINISH_REASON_STOP_TOKEN;
      if (event.finished().reason() == arbor::v1::FINISH_REASON_ERROR) {
        return absl::InternalError(absl::StrCat("job ", job_id, ": ", event.finished().error()));
      }
      sample.generated = event.finished().usage().generated_tokens();
      sample.explored = event.finished().usage().explored_tokens();
    }
  }
  RETURN_IF_ERROR(FromGrpc(reader->Finish()));
  // The committed text, inserts and branch winners included, as the job records it.
  arbor::v1::JobRef ref;
  ref.set_job_id(job_id);
  arbor::v1::Job job;
  RETURN_IF_ERROR(FromGrpc(stub.GetJob(Context(absl::Seconds(30)).get(), ref, &job)));
  sample.text = job.text();
  // The job's text ends with its stop token's (e.g. "<|im_end|>"), which is not part of the
  // answer and would confuse extraction.
  if (stop_token && absl::EndsWith(sample.text, last_piece)) {
    sample.text.resize(sample.text.size() - last_piece.size());
  }
  sample.mean_logprob = tokens > 0 ? logprob / static_cast<double>(tokens) : 0;
  return sample;
}

absl::Status ParallelFor(size_t n, int concurrency, const std::atomic<bool>& interrupted,
                         const std::function<absl::Status(size_t)>& fn) {
  std::atomic<size_t> next{0};
  absl::Mutex mu;
  absl::Status failure;
  auto work = [&] {
    while (!interrupted.load()) {
      {
        absl::MutexLock lock(&mu);
        if (!failure.ok()) return;
      }
      const size_t index = next.fetch_add(1);
      if (index >= n) return;
      if (absl::Status status = fn(index); !status.ok()) {
        absl::MutexLock lock(&mu);
        if (failure.ok()) failure = status;
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  const size_t count = std::clamp<size_t>(concurrency, 1, std::max<size_t>(n, 1));
  for (size_t i = 0; i < count; ++i) threads.emplace_back(work);
  for (std::thread& thread : threads) thread.join();
  return failure;
}

namespace {

// The answer of a generation strategy: one sample, the best of n by mean logprob, or the
// majority of n extracted answers.
absl::StatusOr<Outcome> Answer(Generation::Stub& stub, const Unit& unit,
                               const EvalOptions& options) {
  const Strategy& strategy = *unit.strategy;
  const Task& task = *unit.task;
  Outcome outcome;
  outcome.samples = strategy.samples;
  std::vector<Sample> samples;
  std::vector<std::string> answers;
  for (int j = 0; j < strategy.samples; ++j) {
    const uint64_t seed = SamplerSeed(task.id, unit.seed, j);
    ASSIGN_OR_RETURN(Sample sample, GenerateSample(stub, task, strategy.policy, seed, options,
                                                   absl::StrCat("eval ", strategy.label)));
    outcome.generated_tokens += sample.generated;
    outcome.explored_tokens += sample.explored;
    answers.push_back(ExtractAnswer(task, sample.text));
    samples.push_back(std::move(sample));
  }
  size_t chosen = 0;
  if (strategy.kind == StrategyKind::kBestOfN) {
    for (size_t j = 1; j < samples.size(); ++j) {
      if (samples[j].mean_logprob > samples[chosen].mean_logprob) chosen = j;
    }
  } else if (strategy.kind == StrategyKind::kSelfConsistency) {
    const std::string majority = MajorityVote(answers);
    chosen = std::find(answers.begin(), answers.end(), majority) - answers.begin();
    if (chosen == answers.size()) chosen = 0;
  }
  outcome.output = samples[chosen].text;
  outcome.extracted = answers[chosen];
  return outcome;
}

// A multiple-choice item: the choice with the highest total log-likelihood.
absl::StatusOr<Outcome> AnswerByLikelihood(Generation::Stub& stub, const Task& task,
                                           const EvalOptions& options) {
  arbor::v1::ScoreRequest request;
  SetPrompt(task, request);
  for (const std::string& choice : task.choices) request.add_continuations()->set_text(choice);
  request.set_client_tag(absl::StrCat("eval loglik ", task.id).substr(0, 256));
  arbor::v1::ScoreResponse response;
  RETURN_IF_ERROR(FromGrpc(stub.Score(Context(options.timeout).get(), request, &response)));
  Outcome outcome;
  size_t best = 0;
  for (int i = 0; i < response.continuations_size(); ++i) {
    outcome.explored_tokens += response.continuations(i).tokens_size();
    if (response.continuations(i).total_logprob() >
        response.continuations(static_cast<int>(best)).total_logprob()) {
      best = i;
    }
  }
  outcome.output = task.choices[best];
  outcome.extracted = task.choices[best];
  return outcome;
}

absl::StatusOr<Outcome> Compute(Generation::Stub& stub, const Unit& unit,
                                const EvalOptions& options) {
  const absl::Time start = absl::Now();
  absl::StatusOr<Outcome> outcome = unit.strategy == nullptr
                                        ? AnswerByLikelihood(stub, *unit.task, options)
                                        : Answer(stub, unit, options);
  if (!outcome.ok()) {
    if (!ItemError(outcome.status())) return outcome.status();
    outcome = Outcome();
    outcome->output = absl::StrCat("[error] ", outcome.status().ToString());
  }
  outcome->item = unit.task->id;
  outcome->strategy = unit.strategy == nullptr ? kLoglikStrategy : unit.strategy->label;
  outcome->seed = unit.seed;
  outcome->family = unit.task->family;
  outcome->level = unit.task->level;
  if (unit.task->choices.empty()) {
    outcome->correct = AnswerMatches(*unit.task, outcome->extracted);
  } else {
    outcome->correct = outcome->extracted == unit.task->answer;
  }
  outcome->wall_s = absl::ToDoubleSeconds(absl::Now() - start);
  return outcome;
}

// "[#####.....] 120/600 answers  2.1/s  ETA 3m48s": redrawn in place on a terminal, else a
// line every 5 % so logs show progress too.
class ProgressBar {
 public:
  ProgressBar(std::ostream& out, size_t total, bool terminal)
      : out_(out), total_(total), terminal_(terminal), start_(absl::Now()) {}

  void Done() {
    absl::MutexLock lock(&mu_);
    ++done_;
    const size_t step = std::max<size_t>(total_ / 20, 1);
    if (!terminal_ && done_ % step != 0 && done_ != total_) return;
    const double elapsed = absl::ToDoubleSeconds(absl::Now() - start_);
    const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0;
    const int width = 30;
    const int filled = static_cast<int>(width * done_ / std::max<size_t>(total_, 1));
    const absl::Duration eta =
        rate > 0 ? absl::Seconds(static_cast<double>(total_ - done_) / rate) : absl::ZeroDuration();
    out_ << (terminal_ ? "\r" : "")
         << absl::StrFormat("[%s%s] %d/%d answers  %.2f/s  ETA %s   ", std::string(filled, '#'),
                            std::string(width - filled, '.'), done_, total_, rate,
                            absl::FormatDuration(absl::Trunc(eta, absl::Seconds(1))))
         << (terminal_ && done_ != total_ ? "" : "\n") << std::flush;
  }

 private:
  std::ostream& out_;
  const size_t total_;
  const bool terminal_;
  const absl::Time start_;
  absl::Mutex mu_;
  size_t done_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

std::string Unit::Key() const {
  Outcome key;
  key.item = task->id;
  key.strategy = strategy == nullptr ? kLoglikStrategy : strategy->label;
  key.seed = seed;
  return key.Key();
}

std::vector<Unit> PendingUnits(const std::vector<Task>& tasks,
                               const std::vector<Strategy>& strategies,
                               const std::vector<uint64_t>& seeds, const ResultsLog& log) {
  std::vector<Unit> units;
  auto add = [&](const Unit& unit) {
    if (!log.Has(unit.Key())) units.push_back(unit);
  };
  for (const Task& task : tasks) {
    if (!task.choices.empty()) {
      add({&task, nullptr, 0});
      continue;
    }
    for (const Strategy& strategy : strategies) {
      if (strategy.deterministic()) {
        add({&task, &strategy, 0});
        continue;
      }
      for (uint64_t seed : seeds) add({&task, &strategy, seed});
    }
  }
  return units;
}

absl::Status RunUnits(const std::vector<Unit>& units, const EvalOptions& options, ResultsLog& log,
                      const std::atomic<bool>& interrupted, std::ostream& progress_out) {
  auto stub = Generation::NewStub(rpc::ProcessSecurity().Dial(options.coordinator));
  ProgressBar progress(progress_out, units.size(), options.terminal);
  const absl::Status status =
      ParallelFor(units.size(), options.concurrency, interrupted, [&](size_t i) -> absl::Status {
        ASSIGN_OR_RETURN(Outcome outcome, Compute(*stub, units[i], options));
        RETURN_IF_ERROR(log.Append(outcome));
        progress.Done();
        return absl::OkStatus();
      });
  if (options.terminal && (interrupted.load() || !status.ok())) progress_out << "\n";
  return status;
}

}  // namespace arbor::tools::eval
