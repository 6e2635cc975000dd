// A WorkerClient for job tests, scripted by metrics: per decode step the test says which
// metrics and which top-K distribution the "model" has; the fake then runs the real entropix
// PolicyStep with the item's policy and budgets, as the worker engine does, so decisions and
// draws are the ones a real worker would make. It keeps sequences (new, fork, truncate,
// append), records every request and release, and can fail or hold back completions.
#ifndef ARBOR_TESTS_COORDINATOR_JOB_SCRIPTED_WORKER_H_
#define ARBOR_TESTS_COORDINATOR_JOB_SCRIPTED_WORKER_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/job/worker_client.h"
#include "entropix/attention_metrics.h"
#include "entropix/logit_metrics.h"

namespace arbor::coordinator::testing {

inline constexpr int32_t kVocab = 64;

// What the model "sees" at one step.
struct ScriptedStep {
  float entropy = 0.05f;
  float varentropy = 0.05f;
  entropix::AttentionMetrics attention;
  // Next-token distribution: ids with probabilities (need not sum to 1: the rest is spread
  // nowhere, i.e. the row is renormalised over these ids).
  std::vector<std::pair<int32_t, double>> distribution;
};

struct ScriptInput {
  int32_t position = 0;
  std::vector<int32_t> tokens;  // The sequence before this step.
  uint32_t branch_id = 0;
  int32_t branch_depth = 0;
};

using Script = std::function<ScriptedStep(const ScriptInput&)>;

// Rows of DESIGN §4.2 with the default thresholds.
ScriptedStep Lelv(std::vector<std::pair<int32_t, double>> distribution);
ScriptedStep Helv(std::vector<std::pair<int32_t, double>> distribution);
ScriptedStep Lehv(std::vector<std::pair<int32_t, double>> distribution);
ScriptedStep Hehv(std::vector<std::pair<int32_t, double>> distribution);
ScriptedStep Adaptive(std::vector<std::pair<int32_t, double>> distribution);
// A spread distribution over `n` tokens starting at `first` (probabilities ∝ 1/(i+1)).
std::vector<std::pair<int32_t, double>> Spread(int32_t first, int n);

class ScriptedWorker final : public WorkerClient {
 public:
  ScriptedWorker(std::string id, Script script, std::vector<int32_t> eos_ids = {},
                 int32_t max_context = 512)
      : id_(std::move(id)),
        script_(std::move(script)),
        eos_ids_(std::move(eos_ids)),
        max_context_(max_context) {}

  // With `progress`, the run's token steps go there first (all but a BACKSPACE-able last one
  // before a structural stop, as the worker holds that back), then held or answered as usual.
  // A held Run that is cancelled answers CANCELLED at once, as a worker's call does.
  void Run(arbor::v1::RunRequest request, absl::Duration timeout, RunCallback done,
           ProgressCallback progress, std::shared_ptr<RunCancellation> cancel) override;
  void Release(std::vector<uint64_t> sequence_ids) override;
  // Held completions answer UNAVAILABLE now (the Runs executed: as a frozen worker's would).
  void AbandonRuns() override;
  std::string id() const override { return id_; }

  // After `after` more successful Runs, the next `n` fail with `status` (nothing changes).
  void FailNext(absl::Status status, int n = 1, int after = 0);
  // The next `n` Runs execute (their sequences are created and extended) but answer `status`,
  // as when the caller's deadline passes while the worker is still at work.
  void LoseNextAnswers(absl::Status status, int n = 1);
  // A Run that would leave more than `n` sequences live answers RESOURCE_EXHAUSTED and changes
  // nothing: a worker whose KV cache holds `n` sequences.
  void SetMaxSequences(int n);
  // While held, completions queue up until ReleaseHeld().
  void Hold(bool hold);
  void ReleaseHeld();

  std::vector<arbor::v1::RunRequest> requests() const;
  int cancelled_runs() const;  // Held Runs stopped by their cancellation.
  std::vector<uint64_t> released() const;
  std::set<uint64_t> live() const;  // Sequences created and not released.
  std::vector<int32_t> tokens(uint64_t sequence_id) const;

 private:
  struct Sequence {
    std::vector<int32_t> tokens;
    bool last_sampled = false;
  };
  absl::StatusOr<arbor::v1::RunResponse> Execute(const arbor::v1::RunRequest& request);
  absl::StatusOr<arbor::v1::RunResult> ExecuteItem(const arbor::v1::RunItem& item)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string id_;
  const Script script_;
  const std::vector<int32_t> eos_ids_;
  const int32_t max_context_;

  mutable absl::Mutex mu_;
  std::map<uint64_t, Sequence> sequences_ ABSL_GUARDED_BY(mu_);
  std::vector<arbor::v1::RunRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> released_ ABSL_GUARDED_BY(mu_);
  absl::Status fail_status_ ABSL_GUARDED_BY(mu_);
  int fail_count_ ABSL_GUARDED_BY(mu_) = 0;
  int fail_after_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status lose_status_ ABSL_GUARDED_BY(mu_);
  int lose_count_ ABSL_GUARDED_BY(mu_) = 0;
  int max_sequences_ ABSL_GUARDED_BY(mu_) = std::numeric_limits<int>::max();
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  // Held completions by arrival: each answers its response for OK, else the status given.
  std::map<uint64_t, std::function<void(absl::Status)>> held_ ABSL_GUARDED_BY(mu_);
  uint64_t next_held_ ABSL_GUARDED_BY(mu_) = 0;
  int cancelled_runs_ ABSL_GUARDED_BY(mu_) = 0;
  // Answers every held completion with `status` (OK: its own response).
  void AnswerHeld(const absl::Status& status);
};

}  // namespace arbor::coordinator::testing

#endif  // ARBOR_TESTS_COORDINATOR_JOB_SCRIPTED_WORKER_H_
