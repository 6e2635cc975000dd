// One generation job: owns its SearchTree and drives it on a worker, asynchronously, from RPC
// completions (docs/ARCHITECTURE.md §1, §4): ARGMAX and ADAPTIVE run on the worker's local policy;
// each structural decision returns control here and becomes a tree operation —
//   INSERT    append insert.tokens (INSERTED nodes) and continue;
//   BACKSPACE remove the last generated token, ban it, re-draw its position from its stored
//             top-K with the HEHV parameters, continue with truncate_to + the new token;
//   BRANCH    draw up to the fork width's candidates, fork one rollout per candidate and hand
//             them to the branch strategy the planner opens (branch_planner.h: ROLLOUT, BEAM,
//             TRACE), which runs them through the job (BranchHost) until it names the rollout
//             to commit; the job commits it and releases the rest.
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
// What the client sees — text, events, counts, timings — is the job's output (job_output.h).
//
// Threading. Completions arrive on any thread; each job serialises itself with its own mutex
// (no thread per job). Side effects — worker calls and events — are queued under the lock and
// run after it is released (action_queue.h).
#ifndef ARBOR_COORDINATOR_JOB_JOB_H_
#define ARBOR_COORDINATOR_JOB_JOB_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
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
#include "base/clock.h"
#include "base/log_fields.h"
#include "coordinator/job/action_queue.h"
#include "coordinator/job/branch_planner.h"
#include "coordinator/job/branch_strategy.h"
#include "coordinator/job/job_branch_host.h"
#include "coordinator/job/job_lifecycle.h"
#include "coordinator/job/job_output.h"
#include "coordinator/job/job_spec.h"
#include "coordinator/job/main_sequence.h"
#include "coordinator/job/rollout.h"
#include "coordinator/job/run_builder.h"
#include "coordinator/job/worker_client.h"
#include "coordinator/job/worker_session.h"
#include "coordinator/tree/search_tree.h"
#include "entropix/policy_config.h"

namespace arbor::coordinator {

struct JobOptions {
  int32_t steps_per_run = 64;  // Decode steps per main-path Run, at most.
  // Runs stream their steps (Worker.RunStream): each main-path token reaches the client one
  // forward step after the worker decoded it, and so does a branch's rollouts' text (as the
  // traces'); a Run may be long without delaying the first token. Without streaming, tokens
  // come when a Run ends, so:
  bool stream_runs = true;
  // Unstreamed, a main-path Run decodes as many steps as the job has generated so far, at least
  // this many: the first tokens reach the client after a short Run (time to first token), and
  // the Runs then double up to steps_per_run, so the extra Runs this costs grow only
  // logarithmically.
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
  base::Clock* clock = nullptr;
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
  // Finishes the job as CANCELLED now and releases its sequences; a Run in flight is cancelled
  // (the worker stops it within a step) and the sequences it created are released when it ends.
  void Cancel();
  // Ends the job as FAILED with `why` now, as Cancel ends it: this coordinator may run it no
  // more (another took it over in the job store), and its clients learn why.
  void Abandon(const absl::Status& why);
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
  // Whether `token` ends the job's sequences (JobSpec::IsStopToken).
  bool IsStopToken(int32_t token) const { return spec_.IsStopToken(token); }
  // Runs `read` on the tree under the job's lock (for exports); `read` must not call the job.
  void ReadTree(absl::FunctionRef<void(const SearchTree&)> read) const;
  // The request that runs this job again: the prompt as token ids, the resolved max_tokens,
  // seed and policy, the stops, top_logprobs and processors (Job.request).
  arbor::v1::GenerateRequest ReplayRequest() const;
  // The same with `change`'s policy fields in place of the job's own (the rest as it ran them);
  // INVALID_ARGUMENT naming the field ("policy.branch.width: ...") for a policy out of range.
  absl::StatusOr<arbor::v1::GenerateRequest> ReplayRequest(
      const arbor::v1::PolicyConfig& change) const;

 private:
  Job(JobSpec spec, JobOptions options, JobEnvironment env, SearchTree tree, RunBuilder builder,
      std::unique_ptr<BranchPlanner> planner, uint64_t main_sequence);

  void OnRunDone(uint64_t generation, absl::StatusOr<arbor::v1::RunResponse> response);
  // Steps of Run `generation` the worker streamed before it answered: a main-path Run's are
  // recorded and sent to the client now (OnMainDone skips them), a branch's shown as traces.
  void OnRunProgress(uint64_t generation, const arbor::v1::RunProgress& progress);
  // Asks the re-home callback for a worker (outside the lock) and moves there. `forced`: the
  // old worker failed, so the job fails when no worker can take it.
  void Move(absl::Status cause, bool forced);
  // The backoff after RESOURCE_EXHAUSTED is over: send the work again, or (`move`) look for
  // another worker first.
  void Retry(uint64_t generation, bool move);

  // Everything below runs under mu_; side effects go to actions_.
  void Continue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendMainRun() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The open branch's strategy (branch_strategy.h): its next Run, or its commit; the response
  // to the Run it sent.
  void SendBranch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnBranchDone(const arbor::v1::RunResponse& response) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The rollouts' steps in `results` as the text of the traces the client sees.
  void ShowTraces(const google::protobuf::RepeatedPtrField<arbor::v1::RunResult>& results)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Streamed with JobOptions::stream_runs: main-path steps are recorded as they come, a
  // branch's rollouts shown as the traces' text (when the client takes them: JobSpec::reasoning).
  void SendRun(arbor::v1::RunRequest request, std::vector<uint64_t> ids)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Release(std::vector<uint64_t> ids) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the open branch with `commit`'s winner: tree, releases, events, committed tokens; the
  // main path continues as it says.
  void CommitBranch(BranchCommit commit) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnMainDone(const arbor::v1::RunResult& result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records one main-path step; false when the job finished on it.
  bool RecordMainStep(const arbor::v1::StepResult& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyStructural(const arbor::v1::StepResult& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyInsert(const arbor::v1::StepResult& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ApplyBackspace(const arbor::v1::StepResult& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OpenBranch(const arbor::v1::StepResult& step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The coordinator cannot apply the structural decision: decode the same position once more
  // with structural stops off, so the worker takes the row's fallback sample.
  void Fallback() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleFailure(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RESOURCE_EXHAUSTED: hands back the job's sequences and schedules Retry() after a backoff.
  void WaitForKv(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RESOURCE_EXHAUSTED with a branch open: the worker cannot hold the search as wide as it is,
  // and waiting would not make room its own rollouts take (a job deadlocked on its own KV). The
  // branch is abandoned (its rollouts pruned and released), the branch point takes its fallback
  // sample, and later forks are at most half as wide; under 2, the job stops branching.
  void ShrinkSearch(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
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
  std::vector<uint64_t> LiveSequences() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const JobSpec spec_;
  const JobOptions options_;
  const JobEnvironment env_;
  const RunBuilder builder_;

  mutable absl::Mutex mu_;
  SearchTree tree_ ABSL_GUARDED_BY(mu_);
  JobLifecycle life_ ABSL_GUARDED_BY(mu_);  // QUEUED, RUNNING, then how it ended.
  // The worker, the Run in flight there, and the failover state (worker_session.h).
  WorkerSession session_ ABSL_GUARDED_BY(mu_);

  // The main sequence on the worker, what its next Run must do to it first, and that Run's
  // own state (main_sequence.h).
  MainSequence main_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<BranchStrategy> branch_ ABSL_GUARDED_BY(mu_);  // The open branch, if any.
  // How forks open and which strategy decides them, with what it keeps across the job; how
  // wide forks may still be (ShrinkSearch halves it; below 2 the main items claim the policy's
  // deepest branch depth, where forks are blocked).
  const std::unique_ptr<BranchPlanner> planner_ ABSL_GUARDED_BY(mu_);

  // What the main path has spent of the policy's budgets (inserts, backspaces and their bans);
  // generated_before is filled in when asked (Budgets()).
  PolicyBudgets used_ ABSL_GUARDED_BY(mu_);

  // Text, events, counts and timings as the client sees them.
  JobOutput output_ ABSL_GUARDED_BY(mu_);
  // What the branch strategies reach the job through (job_branch_host.h).
  JobBranchHost host_ ABSL_GUARDED_BY(mu_);

  // Side effects queued under mu_, run after it is released (action_queue.h).
  ActionQueue actions_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_JOB_H_
