// One generation job: owns its SearchTree and drives it on a worker, asynchronously, from RPC
// completions (docs/ARCHITECTURE.md §1, §4): ARGMAX and ADAPTIVE run on the worker's local policy;
// each structural decision returns control here and becomes a tree operation —
//   INSERT    append insert.tokens (INSERTED nodes) and continue;
//   BACKSPACE remove the last generated token, ban it, re-draw its position from its stored
//             top-K with the HEHV parameters, continue with truncate_to + the new token;
//   BRANCH    draw up to branch.width candidates (LEHV parameters), fork one child per
//             candidate and roll all of them out in ONE batched Run (ROLLOUT), or one batched
//             single-step Run per beam step (BEAM, beam_search.h); score (mean logprob + mean
//             confidence term), commit the best, release the rest. ROLLOUT nests up to
//             branch.max_depth (nested_branch.cc): a rollout that stops on BRANCH opens a nested
//             branch at its leaf, resolved before the outer one; BEAM keeps one level.
// TRACE mode (trace_search.cc) branches the same way, but greedily: the worker forks at the first
// answer token and/or where entropy exceeds trace.fork_entropy, candidates are the most likely
// tokens, every rollout runs to its end (up to trace.max_traces traces in all), and once all
// are done the trace whose answer is most confident (trace_choice.h) is committed.
// CANONICAL mode has no structural stops (the worker emits the thinking token itself). Stops:
// stop token, stop strings (on the committed text), max_tokens, context, deadline, Cancel().
// A failed worker (UNAVAILABLE, ...) is replaced through the re-home callback and the committed
// path is prefilled there; when no worker can take the job it waits for one, with backoff. A
// worker out of KV (RESOURCE_EXHAUSTED) is a transient lack, never a failure: the job hands back
// what it holds there and retries with backoff (then looks for another worker), since KV frees
// up as other sequences finish. Waiting is bounded by the deadline and JobOptions::max_wait.
// Rehome() moves a job the same way from a worker that drains or is presumed dead (a Run in
// flight on a dead one is abandoned, not awaited).
//
// Text. Token events carry the committed text incrementally (stop_strings.h): text a possible
// stop string could still start with is held back until it cannot match, and released with the
// token the job ends on. A backspace event retracts exactly the text streamed with the removed
// token's event.
//
// Threading. Completions arrive on any thread; each job serialises itself with its own mutex
// (no thread per job). Side effects — worker calls and events — are queued under the lock and
// run after it is released, in order, by whichever thread is draining the queue; so the event
// sink and the worker client may call back into the job (accessors, Cancel) without deadlock,
// and events reach the sink in the order they happened.
#ifndef ARBOR_COORDINATOR_JOB_JOB_H_
#define ARBOR_COORDINATOR_JOB_JOB_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "arbor/v1/generation.pb.h"
#include "arbor/v1/worker.pb.h"
#include "base/log_fields.h"
#include "coordinator/clock.h"
#include "coordinator/job/beam_search.h"
#include "coordinator/job/branch_search.h"
#include "coordinator/job/run_builder.h"
#include "coordinator/job/stop_strings.h"
#include "coordinator/job/trace_choice.h"
#include "coordinator/job/worker_client.h"
#include "coordinator/job/worker_session.h"
#include "coordinator/tree/search_tree.h"
#include "entropix/policy_config.h"

namespace arbor::coordinator {

// The checked request, resolved against the model.
struct JobSpec {
  std::string job_id;
  std::vector<int32_t> prompt_token_ids;  // Non-empty, each in [0, vocab_size).
  int32_t vocab_size = 0;
  int32_t max_context = 0;  // Tokens per sequence, prompt included.
  int32_t max_tokens = 0;   // >= 1; prompt + max_tokens <= max_context.
  uint64_t seed = 0;
  // Validated; mode SEARCH or CANONICAL; insert.tokens resolved (non-empty unless INSERT is
  // off: insert.max_per_job = 0).
  entropix::PolicyConfig policy;
  std::vector<int32_t> eos_token_ids;  // The model's; ignored with ignore_eos.
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
  std::vector<std::string> stop_strings;
  int32_t top_logprobs = 0;  // Alternatives kept per node.
  absl::Time deadline = absl::InfiniteFuture();
  arbor::v1::LogitProcessors processors;  // Validated; on every decode step of every sequence.
};

struct JobOptions {
  int32_t steps_per_run = 64;  // Decode steps per main-path Run, at most.
  // A main-path Run decodes as many steps as the job has generated so far, at least this many:
  // the first tokens reach the client after a short Run (time to first token), and the Runs
  // then double up to steps_per_run, so the extra Runs this costs grow only logarithmically.
  int32_t first_run_steps = 4;
  int32_t top_k = 64;  // Top-K asked of the worker (<= its max_top_k).
  absl::Duration run_timeout = absl::Minutes(2);
  int32_t max_consecutive_failures = 3;  // Worker failures in a row before the job fails.
  // RESOURCE_EXHAUSTED from the worker is retried there this many times in a row, the first
  // after exhausted_backoff and each next one after twice the last wait, before re-homing.
  // Needs JobEnvironment::schedule_after.
  int32_t exhausted_retries = 3;
  absl::Duration exhausted_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(1);  // The doubling waits stop growing here.
  // How long a job may wait in a row for KV or for a worker to take it, before it fails; the
  // deadline bounds it too. A successful Run ends the wait.
  absl::Duration max_wait = absl::Minutes(5);
};

// Everything the job talks to; it outlives nothing but `worker`, which it holds.
struct JobEnvironment {
  std::shared_ptr<WorkerClient> worker;
  // Sequence ids unique per worker while alive (a coordinator-wide counter is enough).
  std::function<uint64_t()> next_sequence_id;
  // Text of a token sequence; must not end inside a character (hold incomplete bytes back).
  std::function<std::string(absl::Span<const int32_t>)> decode;
  Clock* clock = nullptr;
  std::function<void(const arbor::v1::GenerateEvent&)> sink;
  // Another worker for the job, which leaves `from` because of `cause` (a failure, or
  // Rehome()'s reason). After a failure an error makes the job wait and ask again (fail without
  // schedule_after); after Rehome() the job stays.
  std::function<absl::StatusOr<std::shared_ptr<WorkerClient>>(const WorkerClient& from,
                                                              const absl::Status& cause)>
      rehome;
  // Runs `callback` once, on any thread, after `delay`. Optional: unset, a worker out of KV is
  // left at once through `rehome`, and a job no worker can take fails.
  std::function<void(absl::Duration delay, std::function<void()> callback)> schedule_after;
};

class Job : public std::enable_shared_from_this<Job> {
 public:
  // INVALID_ARGUMENT for an inconsistent spec.
  static absl::StatusOr<std::shared_ptr<Job>> Create(JobSpec spec, JobOptions options,
                                                     JobEnvironment env);

  // Sends the first Run (prefill the prompt and decode). Once.
  void Start();
  // Finishes the job as CANCELLED now and releases its sequences; a Run in flight completes
  // and is discarded (the sequences it created are released then).
  void Cancel();
  // Moves the job off its worker (draining, or lost with no Run of ours in flight) at the next
  // safe point: when the Run in flight completes, or now when there is none. A worker presumed
  // dead (`reason` UNAVAILABLE) has its Run abandoned at once (WorkerClient::AbandonRuns), as a
  // frozen worker may never answer. Its sequences
  // there are released, the committed path (and live rollouts) prefilled on the worker the
  // re-home callback picks, and a Rehomed event carries `reason`. When no worker can take it,
  // the job stays where it is. A no-op for a finished job or one already moving.
  void Rehome(absl::Status reason);

  arbor::v1::JobState state() const;
  arbor::v1::FinishReason finish_reason() const;
  std::string error() const;
  std::string worker_id() const;
  int32_t rehomed() const;
  int32_t reprefilled() const;  // Times prefilled again on a worker that dropped its sequences.
  // Committed generated text (cut before a stop string) and tokens (inserts included).
  std::string text() const;
  std::vector<int32_t> token_ids() const;
  arbor::v1::Usage usage() const;
  arbor::v1::Timings timings() const;
  arbor::v1::StrategyCounts strategy_counts() const;
  // Whether `token` ends the job's sequences: the model's eos ids (unless ignore_eos) and the
  // request's stop ids.
  bool IsStopToken(int32_t token) const;
  // Runs `read` on the tree under the job's lock (for exports); `read` must not call the job.
  void ReadTree(absl::FunctionRef<void(const SearchTree&)> read) const;
  // The request that runs this job again: the prompt as token ids, the resolved max_tokens,
  // seed and policy, the stops, top_logprobs and processors (Job.request).
  arbor::v1::GenerateRequest ReplayRequest() const;

 private:
  // One rollout of a branch (ROLLOUT: one per candidate; BEAM: one per beam).
  struct Child {
    uint64_t sequence_id = 0;
    uint32_t branch_id = 0;
    NodeId candidate = kNoNode;
    NodeId leaf = kNoNode;
    int32_t token_id = 0;  // The leaf's token.
    RolloutScore score{entropix::AdaptiveOptions{}};
    // BEAM: what the next beam step does to the sequence first (it continues, truncates or
    // forks the sequence of the beam it came from), and the state of the beam.
    SequenceSource source;
    bool sent = false;  // `source` was applied on the worker.
    bool done = false;  // Calm, stopped or at max_len.
    int32_t calm = 0;   // Consecutive calm steps.
    int candidate_index = 0;
    // ROLLOUT: nesting depth (1 below the committed path), length budget with the candidate,
    // why its last Run stopped, and whether its next Run takes a structural decision's fallback
    // sample (INSERT, BACKSPACE, or a BRANCH without candidates).
    int32_t depth = 1;
    int32_t max_len = 0;
    arbor::v1::StopReason stop = arbor::v1::STOP_REASON_UNSPECIFIED;
    bool structural_off_once = false;
    // The nested branch open at `leaf`, one child per candidate; empty when none is.
    std::vector<Child> nested;
    // TRACE with trace.warmup_traces: a trace of the first fork beyond the warm-up waits until
    // the warm-up traces are done (`held`), then runs with the early stop they set.
    bool held = false;
    bool stoppable = false;
  };
  struct Branch {
    NodeId point = kNoNode;
    std::vector<Child> children;      // BEAM: the current beams.
    std::vector<double> beam_scores;  // BEAM: per candidate, its best beam's latest score.
  };
  Job(JobSpec spec, JobOptions options, JobEnvironment env, SearchTree tree, RunBuilder builder,
      std::shared_ptr<const base::AnswerPattern> answer_pattern);

  void OnRunDone(uint64_t generation, absl::StatusOr<arbor::v1::RunResponse> response);
  // Asks the re-home callback for a worker (outside the lock) and moves there. `forced`: the
  // old worker failed, so the job fails when no worker can take it.
  void Move(absl::Status cause, bool forced);
  // The backoff after RESOURCE_EXHAUSTED is over: send the work again, or (`move`) look for
  // another worker first.
  void Retry(uint64_t generation, bool move);
  void Drain() ABSL_LOCKS_EXCLUDED(mu_);

  // Everything below runs under mu_; side effects go to actions_.
  void Continue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendMainRun() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ROLLOUT (nested_branch.cc): one batched Run for every rollout with work left, at any depth;
  // its results, nested branches opened and resolved; the outer branch when all are done.
  void SendRollout() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnRolloutDone(const arbor::v1::RunResponse& response) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The rollouts SendRollout() sends, in item order.
  std::vector<Child*> PendingRollouts() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records one rollout's Run; false when the job finished (failed) on it.
  bool RecordRollout(Child& child, const arbor::v1::RunResult& result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Resolves every nested branch below `child` whose rollouts are all done, deepest first; the
  // winner continues as the rollout it is nested in. False when the job failed.
  bool ResolveNested(Child& child) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Resolves the nested branch open at `child`'s leaf with child.nested[winner] winning: the
  // tree, releases, the event; the winner continues as `child`, which is then done.
  bool AdoptNestedWinner(Child& child, int winner_index, const std::vector<float>& scores,
                         const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // TRACE (trace_search.cc): whether the job runs in TRACE mode; how many more traces a fork
  // may add; once every trace is done, judges them all, resolves the nested branches towards
  // the winner and commits it.
  bool trace() const { return spec_.policy.mode == entropix::PolicyMode::kTrace; }
  int32_t TraceRoom() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Candidates a fork that replaces `replaced` traces may open: the mode's width, and in TRACE
  // no more than the room left (the main path replaces none, a rollout itself).
  int ForkWidth(int32_t replaced) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ResolveTraces() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // DeepConf's warm-up (trace.warmup_traces): marks the first fork's traces beyond the warm-up
  // held; once every other trace is done, sets the stop threshold from the warm-up traces and
  // lets the held ones run.
  void HoldBeyondWarmup(std::vector<Child>& children) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseAfterWarmup() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The early stop of a stoppable rollout's next Run (threshold, window, recent confidences).
  void SetConfidenceStop(const Child& child, arbor::v1::RunItem& item) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One finished trace: its leaf, the candidate it forked with, and the verdict on it.
  struct JudgedTrace {
    NodeId leaf = kNoNode;
    NodeId candidate = kNoNode;
    TraceJudgement judgement;
  };
  // Judges every trace below `children`, `certainties` holding those of the path above them.
  // False when the job failed.
  bool JudgeTraces(const std::vector<Child>& children,
                   const std::vector<TokenCertainty>& certainties, std::vector<JudgedTrace>& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Resolves the nested branches below `child` towards its best-ranked trace (`rank`: leaf to
  // rank, 0 best; `confidence`: per rank) and returns that rank, or -1 when the job failed.
  int ResolveTowards(Child& child, const std::map<NodeId, int>& rank,
                     const std::vector<double>& confidence) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ResolveTowards on each of `siblings`: per sibling the rank of its best trace and that
  // trace's confidence, and which sibling holds the best. nullopt when the job failed.
  struct SiblingRanks {
    std::vector<int> best;
    std::vector<float> scores;
    int winner = 0;
  };
  std::optional<SiblingRanks> RankSiblings(std::vector<Child>& siblings,
                                           const std::map<NodeId, int>& rank,
                                           const std::vector<double>& confidence)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls `f` on every rollout of `children` and, after each, on those nested in it.
  template <typename Children, typename F>
  static void ForEachRollout(Children& children, const F& f) {
    for (auto& child : children) {
      f(child);
      ForEachRollout(child.nested, f);
    }
  }
  // BEAM (beam_search.cc): one step for every beam not done; the step's ranking; the end.
  void SendBeamStep() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnBeamStepDone(const arbor::v1::RunResponse& response) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The step each beam took (null for one that took none), marking beams done or sent.
  std::vector<const arbor::v1::StepResult*> TakeBeamSteps(const arbor::v1::RunResponse& response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The beam `pick` makes of its parent: its own sequence continued (`owns_sequence`) or forked,
  // the token added to the tree and the score.
  absl::StatusOr<Child> ExtendBeam(const BeamPick& pick,
                                   const std::vector<const arbor::v1::StepResult*>& steps,
                                   bool owns_sequence) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ResolveBeams() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Commits `branch_` with children[winner] winning: tree, releases, events, committed tokens.
  // `main_sequence`/`source`: how the main path continues on the worker afterwards.
  void CommitBranch(int winner, const std::vector<float>& scores, const std::string& reason,
                    uint64_t main_sequence, SequenceSource source, arbor::v1::StopReason stop)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Prompt, committed tokens, then the rollout tokens from below the branch point to `leaf`.
  std::vector<int32_t> PathTokens(NodeId leaf) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendRun(arbor::v1::RunRequest request, std::vector<uint64_t> ids)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnMainDone(const arbor::v1::RunResult& result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records one main-path step; false when the job finished on it.
  bool RecordMainStep(const arbor::v1::StepResult& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyStructural(const arbor::v1::StepResult& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyInsert(const arbor::v1::StepResult& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyBackspace(const arbor::v1::StepResult& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OpenBranch(const arbor::v1::StepResult& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Opens a branch at `point` (the tail, or a rollout leaf) from `structural_step`: draws the
  // candidates (RNG branch `rng_branch`), one child per candidate at `depth` whose sequence is
  // `base` plus its candidate, with `max_len` tokens at most; the tree and the BranchOpened
  // event. Empty when there is no candidate (the caller falls back).
  absl::StatusOr<std::vector<Child>> ForkCandidates(NodeId point,
                                                    const arbor::v1::StepResult& structural_step,
                                                    uint32_t rng_branch, const SequenceSource& base,
                                                    int32_t depth, int32_t max_len, int width)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The BranchResolved event of `resolution`.
  void EmitResolved(const BranchResolution& resolution, const std::vector<float>& scores,
                    const std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The coordinator cannot apply the structural decision: decode the same position once more
  // with structural stops off, so the worker takes the row's fallback sample.
  void Fallback() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleFailure(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RESOURCE_EXHAUSTED: hands back the job's sequences and schedules Retry() after a backoff.
  void WaitForKv(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // NOT_FOUND: the worker no longer holds the job's sequences; prefill them there again.
  void Reprefill(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Releases every sequence the job holds on its worker; the next Run prefills the committed
  // path (and each live rollout) afresh.
  void ResetSequences() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues Move() unless one is queued or running.
  void RequestMove(absl::Status cause, bool forced) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finish(arbor::v1::FinishReason reason, std::string error = "")
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Fail(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Finish(arbor::v1::FINISH_REASON_ERROR, status.ToString());
  }
  // The fields of the job's log lines (base/log_fields.h): job_id, worker, `event`, then `more`.
  base::LogFields LogFieldsFor(std::string_view event, base::LogFields more = {}) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Emits the token event of the committed node `id` and checks the stop strings; false when
  // the job finished on a stop string.
  bool EmitCommitted(NodeId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Streams the committed node `id`'s text: appends what became streamable to `piece`; true when
  // a stop string matched (the caller emits its event, then finishes). A stop token adds no
  // text of its own.
  bool PushText(NodeId id, std::string* piece) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The token's own text and its top_logprobs alternatives, for clients that asked for them.
  void AddTokenDetail(const Node& node, arbor::v1::TokenEvent& token) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Emit(arbor::v1::GenerateEvent event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Release(std::vector<uint64_t> ids) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<uint64_t> LiveSequences() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PolicyBudgets Budgets() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int32_t Remaining() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Count(arbor::v1::Strategy strategy) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  arbor::v1::Usage UsageLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t SinceCreated() const;
  bool finished() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return state_ != arbor::v1::JOB_STATE_QUEUED && state_ != arbor::v1::JOB_STATE_RUNNING;
  }

  const JobSpec spec_;
  const JobOptions options_;
  const JobEnvironment env_;
  const RunBuilder builder_;
  const absl::Time created_;
  // TRACE: policy.trace.answer_pattern compiled; null when it is empty.
  const std::shared_ptr<const base::AnswerPattern> answer_pattern_;

  mutable absl::Mutex mu_;
  SearchTree tree_ ABSL_GUARDED_BY(mu_);
  arbor::v1::JobState state_ ABSL_GUARDED_BY(mu_) = arbor::v1::JOB_STATE_QUEUED;
  arbor::v1::FinishReason finish_reason_ ABSL_GUARDED_BY(mu_) =
      arbor::v1::FINISH_REASON_UNSPECIFIED;
  std::string error_ ABSL_GUARDED_BY(mu_);
  // The worker, the Run in flight there, and the failover state (worker_session.h).
  WorkerSession session_ ABSL_GUARDED_BY(mu_);

  // The main sequence on the worker and what its next Run must do to it first.
  uint64_t main_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  bool main_live_ ABSL_GUARDED_BY(mu_) = false;  // Exists on the worker.
  SequenceSource main_source_ ABSL_GUARDED_BY(mu_);
  bool structural_off_once_ ABSL_GUARDED_BY(mu_) = false;  // See Fallback().
  std::optional<Branch> branch_ ABSL_GUARDED_BY(mu_);
  // TRACE: certainties of the committed generated tokens; traces (rollout leaves) opened so far;
  // the early stop the warm-up traces set (trace.warmup_traces).
  std::vector<TokenCertainty> trunk_certainties_ ABSL_GUARDED_BY(mu_);
  std::optional<double> stop_below_confidence_ ABSL_GUARDED_BY(mu_);
  int32_t traces_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t next_branch_id_ ABSL_GUARDED_BY(mu_) = 1;

  int32_t inserts_used_ ABSL_GUARDED_BY(mu_) = 0;
  int32_t backspaces_used_ ABSL_GUARDED_BY(mu_) = 0;
  int32_t last_insert_position_ ABSL_GUARDED_BY(mu_) = -1;
  std::vector<arbor::v1::TokenBan> bans_ ABSL_GUARDED_BY(mu_);

  StreamedText text_ ABSL_GUARDED_BY(mu_);  // Committed text (cut at a stop string).
  arbor::v1::StrategyCounts counts_ ABSL_GUARDED_BY(mu_);
  arbor::v1::Timings timings_ ABSL_GUARDED_BY(mu_);
  int32_t cached_prompt_tokens_ ABSL_GUARDED_BY(mu_) = 0;

  std::deque<std::function<void()>> actions_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_JOB_H_
