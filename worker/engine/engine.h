// The worker's engine: continuous batching of Run requests over one backend.
//
// Any number of concurrent Runs, from any number of jobs, are merged into shared forward steps:
// each step takes at most one row per active item — a chunk of its pending prefill, or its one
// decode token — runs the model once, and hands every row's next-token distribution to that
// item's local entropix policy (item_run.h). Items stop independently (structural decision, stop
// token, calm, max steps, context); a Run answers when all its items have stopped.
//
// Jobs (RunRequest.job_id) share crowded steps fairly: while several jobs have rows to run, a
// step holds EngineOptions::shared_step_rows rows (shared_rows_per_job per job when there are
// many), divided max-min fairly between them (fair_share.h), so a wide search's items spread
// over steps instead of making every step long for everyone; a lone job has whole steps of up
// to max_step_rows rows once it has been alone for share_linger. Sampling is keyed by (seed,
// position, branch) and the backend's rows do not depend on their neighbours, so how rows are
// grouped into steps changes no result.
//
// One scheduling thread owns the KV cache, the sequences and the backend, so none of them needs
// locks; requests reach it through one mutex-guarded queue, handled in arrival order (a Release
// sent after a Run applies after it), and leave through callbacks invoked on that thread (they
// must not block) once Health() already reflects what they report.
#ifndef ARBOR_WORKER_ENGINE_ENGINE_H_
#define ARBOR_WORKER_ENGINE_ENGINE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <thread>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "arbor/v1/worker.pb.h"
#include "entropix/policy_config.h"
#include "grammar/constraint.h"
#include "grammar/token_trie.h"
#include "metrics/registry.h"
#include "worker/backend/backend.h"
#include "worker/engine/item_run.h"
#include "worker/engine/run_validation.h"
#include "worker/engine/worker_metrics.h"
#include "worker/kv/kv_cache.h"
#include "worker/kv/sequence_store.h"

namespace arbor::worker {

struct EngineOptions {
  // Tokens one forward step may hold (a lone job's decode rows always fit; prefill is chunked
  // to the rest).
  int32_t max_batch_tokens = 512;
  // Rows a step holds while more than one job has rows to run (at least one per such job),
  // and tokens (at most max_batch_tokens): each job gets its max-min fair share of the rows,
  // then of the tokens its rows would take. Bounds the step, hence every job's time per token,
  // whatever the other jobs ask for. shared_step_rows 0: no sharing — every decode row runs
  // every step, prefill in arrival order.
  int32_t shared_step_rows = 8;
  int32_t shared_step_tokens = 64;
  // Rows a crowded step holds per job with rows to run, when that is more than
  // shared_step_rows (still at most max_step_rows): with many jobs each one's fair share would
  // otherwise be a single row, and a job with several items (a trace search's traces) would
  // advance one of them a step. A narrow job's step then holds as many rows as this many narrow
  // rows per job would. 1: one row per job.
  int32_t shared_rows_per_job = 2;
  // Rows any step holds, a lone job's too: a job arriving beside a wide one waits for the step
  // in flight, so that step must stay short (256 rows of a lone trace took 0.25–0.5 s on 2
  // cores). The job's other rows run in the next steps. 0: no bound.
  int32_t max_step_rows = 32;
  // How long a job left alone keeps the shared steps' shape (shared_step_rows and
  // shared_step_tokens, as one job of a crowd) after the last step it shared, before its steps
  // widen to max_step_rows: whoever arrives next waits for the step in flight, and requests come
  // in bursts, so a wide job that was just sharing keeps its steps short for a while. A job that
  // was alone all along has whole steps at once. Zero: widen at once.
  absl::Duration share_linger = absl::Milliseconds(500);
  int32_t max_top_k = 256;
  // Unset fields of a request's policy take these values; insert.tokens must be resolved.
  entropix::PolicyConfig default_policy;
  std::vector<int32_t> eos_token_ids;
  int32_t max_context = 0;  // 0: the model's max_position_embeddings.
  // Where the engine's metrics (worker_metrics.h) go; must outlive the engine.
  metrics::Registry* metrics = &metrics::DefaultRegistry();
  int64_t kv_bytes_per_token = 0;  // For the KV metrics in bytes; 0: not exported in bytes.
  // A run's progress (Run's `progress`) goes out at most this often: a model whose steps take
  // tens of microseconds would otherwise spend its engine thread on an update per step per run,
  // for latency no client sees. Steps held back go with the next update.
  absl::Duration min_progress_interval = absl::Milliseconds(1);
  // The vocabulary's bytes, for output constraints (RunItem.constraint); null: items with a
  // constraint fail (the worker has no tokenizer).
  std::shared_ptr<const grammar::TokenTrie> vocabulary;
};

class Engine {
 public:
  using RunCallback = std::function<void(absl::StatusOr<v1::RunResponse>)>;
  // Steps a run decoded since its previous progress (v1::RunProgress), before it answers.
  using ProgressCallback = std::function<void(v1::RunProgress)>;

  Engine(std::unique_ptr<Backend> backend, EngineOptions options);
  ~Engine();  // Fails queued and active runs with UNAVAILABLE, applies queued releases, joins.
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const RunLimits& limits() const { return limits_; }
  const Backend& backend() const { return *backend_; }

  // Queues a run. `cancelled` is polled at admission (a run cancelled by then answers CANCELLED
  // and creates nothing) and between steps (client gone or deadline passed).
  // `done` runs exactly once: on the engine thread, or before Run returns when the request
  // fails ValidateRunRequest. `progress`, when set, runs on the engine thread after a step that
  // made some of the run's steps final (ItemRun::FinalSteps), at most once per
  // min_progress_interval and never after `done`; like `done` it must not block.
  void Run(v1::RunRequest request, std::function<bool()> cancelled, RunCallback done,
           ProgressCallback progress = nullptr);
  // Releases sequences (unknown ids are ignored; busy ones go when their run ends). `done`
  // receives how many ids were live.
  void Release(std::vector<uint64_t> ids, std::function<void(int32_t)> done);
  // Releases every sequence that runs of owner epoch `owner` (RunRequest.owner_epoch, non-zero)
  // created, as Release does; they count in Health's expired_sequences.
  void ReleaseOwner(uint64_t owner, std::function<void(int32_t)> done);
  // Load and cache statistics as of the last step.
  v1::HealthResponse Health() const;

 private:
  struct QueuedRun {
    v1::RunRequest request;
    std::function<bool()> cancelled;
    RunCallback done;
    ProgressCallback progress;
    absl::Time submitted;
  };
  struct QueuedRelease {
    std::vector<uint64_t> ids;
    std::function<void(int32_t)> done;
    uint64_t owner = 0;  // Non-zero: release the sequences of this owner instead of `ids`.
  };
  struct ActiveRun;
  struct Row;
  struct JobRows;

  void Loop();
  void ProcessRelease(QueuedRelease& release);
  void Admit(QueuedRun queued);
  absl::Status CheckItem(const v1::RunItem& item, int index) const;
  absl::Status PrepareItem(ActiveRun& run, int index);
  void RollBack(ActiveRun& run);
  void Step();
  // Step's pieces: the rows as the backend takes them (with their reduction requests), each
  // row's policy from its reduction, its outcome applied to its item and sequence (or the step's
  // failure to its run), and the step's time counted for every run that took part.
  std::vector<ForwardRow> ForwardRowsOf(std::vector<Row>& rows);
  void ApplyPolicies(std::vector<Row>& rows);
  void TakeRowResult(Row& row, const absl::Status& status);
  void RecordStepTime(const std::vector<Row>& rows, int64_t elapsed_us, bool forwarded);
  // Ends an item that decodes nothing once its tokens have been through the model.
  void StopIfPrefilled(ItemRun& item, const SequenceState& state);
  void StopPrefilledItems();  // StopIfPrefilled for every item after a step.
  absl::Status BuildRows(std::vector<Row>& rows);
  // Rows a step shared by `jobs` jobs holds (EngineOptions::shared_step_rows and
  // shared_rows_per_job).
  int32_t SharedStepRows(size_t jobs) const;
  // The active runs by job (in order of their first run's arrival) with the tokens each job
  // wants this step; jobs that want none are left out.
  std::vector<JobRows> JobsWithWork();
  // The rows of `runs`, decode rows first, then prefill chunks and scoring rows, in arrival
  // order: with `max_rows`, items while the job has fewer rows and some of `budget` tokens
  // left; without, every decode row and prefill within `budget`.
  absl::Status AddJobRows(const std::vector<ActiveRun*>& runs, int32_t budget,
                          std::optional<int32_t> max_rows, std::vector<Row>& rows);
  // Tokens `item` would put into this step without a budget: 1 for a decode row, else
  // its pending prefill and scoring tokens (before prefix-cache hits).
  int32_t TokensWanted(const ItemRun& item);
  // The rows of an item that has more than its decode token pending: a prefill chunk, or the
  // chunk before the scored tokens and one row per scored token, as `budget` allows.
  absl::Status AddPrefillRows(ActiveRun& run, size_t index, std::vector<Row>& rows,
                              int32_t& budget);
  // Takes `take` pending tokens of the item as one row (fewer after prefix-cache hits; none
  // when all hit). KV exhaustion ends a decoding item or fails the run, and is not an error here.
  absl::Status AddRow(ActiveRun& run, size_t index, int32_t take, std::vector<Row>& rows,
                      int32_t& budget);
  // Queues each unfinished run's progress: the steps that became final in this step.
  void ReportProgress();
  void FinishRuns();
  // After a failed step: asks the backend whether it can go on (Backend::Usable); when not, the
  // engine is broken for good: Health says not serving, and every run fails with UNAVAILABLE.
  void CheckBackend();
  void PublishHealth();
  // The compiled RunItem.constraint of items[index] (null when it has none).
  absl::StatusOr<std::shared_ptr<grammar::CompiledConstraint>> ConstraintOf(const v1::RunItem& item,
                                                                            int index);

  std::unique_ptr<Backend> backend_;
  EngineOptions options_;
  RunLimits limits_;
  ItemLimits item_limits_;
  std::unique_ptr<grammar::ConstraintCache> constraints_;  // Null without a vocabulary.
  KvCache kv_;
  SequenceStore sequences_;
  WorkerMetrics metrics_;
  std::list<std::unique_ptr<ActiveRun>> active_;
  std::vector<uint64_t> deferred_releases_;
  int64_t computed_tokens_ = 0;
  size_t share_turn_ = 0;  // Which job gets a shared step's indivisible tokens first (FairShares).
  absl::Time last_shared_step_ = absl::InfinitePast();  // For EngineOptions::share_linger.
  int64_t expired_sequences_ = 0;  // Released by ReleaseOwner since start.
  absl::Status broken_;            // Set by CheckBackend when the backend became unusable.
  // Callbacks of this iteration, invoked after PublishHealth.
  std::vector<std::function<void()>> completions_;

  mutable absl::Mutex mu_;
  std::deque<std::variant<QueuedRun, QueuedRelease>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  v1::HealthResponse health_ ABSL_GUARDED_BY(mu_);

  std::thread thread_;
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_ENGINE_ENGINE_H_
