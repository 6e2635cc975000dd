// Running an evaluation against a coordinator: every (item, strategy, seed) answer not yet in
// the results log, a few at a time, each appended to the log as soon as it is in. Generation
// items go through Generate (best_of_n and self_consistency draw several samples per answer);
// multiple-choice items (task "choices") are answered once by log-likelihood through Score
// (strategy "loglik"). Interrupting (Ctrl-C) stops taking new answers, waits for those in
// flight, and returns; running again resumes.
#ifndef ARBOR_TOOLS_EVAL_EVAL_RUNNER_H_
#define ARBOR_TOOLS_EVAL_EVAL_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "tools/eval/results_log.h"
#include "tools/eval/strategies.h"
#include "tools/eval/task_file.h"

namespace arbor::tools::eval {

inline constexpr char kLoglikStrategy[] = "loglik";

struct EvalOptions {
  std::string coordinator = "127.0.0.1:50051";
  std::vector<uint64_t> seeds = {1, 2, 3};
  int max_tokens = 64;                         // For items without their own max_tokens.
  int concurrency = 4;                         // Answers in flight.
  absl::Duration timeout = absl::Minutes(10);  // Per generation.
  // Progress redrawn in place (a terminal), else a line every 5 %.
  bool terminal = true;
};

// One answer still to compute.
struct Unit {
  const Task* task = nullptr;
  const Strategy* strategy = nullptr;  // Null: loglik (multiple choice).
  uint64_t seed = 0;
  std::string Key() const;
};

// One generation's result.
struct Sample {
  std::string text;  // The job's committed text.
  int64_t generated = 0;
  int64_t explored = 0;
  double mean_logprob = 0;                  // Over the committed tokens' T = 1 logprobs.
  std::vector<arbor::v1::Metrics> metrics;  // Of every committed token's step.
};

// The server's sampler seed for sample `sample` of the answer to item `item_id` under eval seed
// `seed`: a stable hash of all three, never 0 (which asks the server to pick). The server's draws
// are a pure function of (seed, position), and the items of one family have prompts of nearly
// the same length, so one seed shared by every item would give them all the same uniforms at the
// answer's first tokens: one lucky or unlucky draw for the whole run instead of one per item.
uint64_t SamplerSeed(const std::string& item_id, uint64_t seed, int sample);

// Generates once for `task` with `policy` and sampler `seed` (client tag `tag`).
absl::StatusOr<Sample> GenerateSample(arbor::v1::Generation::Stub& stub, const Task& task,
                                      const arbor::v1::PolicyConfig& policy, uint64_t seed,
                                      const EvalOptions& options, const std::string& tag);

// fn(i) for every i in [0, n) on `concurrency` threads, in order of i, until `interrupted` is
// set or fn fails (the first failure is returned).
absl::Status ParallelFor(size_t n, int concurrency, const std::atomic<bool>& interrupted,
                         const std::function<absl::Status(size_t)>& fn);

// Every answer the evaluation needs, in item order; those already in `log` are left out.
std::vector<Unit> PendingUnits(const std::vector<Task>& tasks,
                               const std::vector<Strategy>& strategies,
                               const std::vector<uint64_t>& seeds, const ResultsLog& log);

// Computes `units`, appending each answer to `log`. Stops early (OK) once `interrupted` is set.
// Fails with the first RPC error that is not the item's own (the coordinator unreachable).
absl::Status RunUnits(const std::vector<Unit>& units, const EvalOptions& options, ResultsLog& log,
                      const std::atomic<bool>& interrupted, std::ostream& progress_out);

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_EVAL_RUNNER_H_
