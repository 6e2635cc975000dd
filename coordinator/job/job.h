// One generation job: owns its SearchTree and drives it on a worker, asynchronously, from RPC
// completions (docs/ARCHITECTURE.md §1, §4): ARGMAX and ADAPTIVE run on the worker's local policy;
// each structural decision returns control to the job's main path and becomes a tree operation —
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
// The job keeps its lifecycle, its tree and worker session, and the wiring of its parts: the
// main path (main_path.h: the main sequence's Runs, the structural decisions, the open branch)
// and the failover (job_failover.h: waiting, moving, prefilling again), which reach the job
// through JobControl (job_control.h). What the client sees — text, events, counts, timings — is
// the job's output (job_output.h).
//
// Threading. Completions arrive on any thread; each job serialises itself with its own mutex
// (no thread per job). Side effects — worker calls and events — are queued under the lock and
// run after it is released (action_queue.h).
#ifndef ARBOR_COORDINATOR_JOB_JOB_H_
#define ARBOR_COORDINATOR_JOB_JOB_H_

#include <cstdint>
#include <functional>
#include <memory>
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
#include "coordinator/job/job_control.h"
#include "coordinator/job/job_failover.h"
#include "coordinator/job/job_lifecycle.h"
#include "coordinator/job/job_options.h"
#include "coordinator/job/job_output.h"
#include "coordinator/job/job_spec.h"
#include "coordinator/job/main_path.h"
#include "coordinator/job/run_builder.h"
#include "coordinator/job/worker_client.h"
#include "coordinator/job/worker_session.h"
#include "coordinator/tree/search_tree.h"

namespace arbor::coordinator {

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

class Job : public std::enable_shared_from_this<Job>, private JobControl {
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

  // Entry points (no lock held on entry): the worker's answer to Run `generation`, and the
  // steps of it the worker streamed before (MainPath::OnProgress).
  void OnRunDone(uint64_t generation, absl::StatusOr<arbor::v1::RunResponse> response)
      ABSL_LOCKS_EXCLUDED(mu_);
  void OnRunProgress(uint64_t generation, const arbor::v1::RunProgress& progress)
      ABSL_LOCKS_EXCLUDED(mu_);

  // JobControl (job_control.h).
  void Continue() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Streamed with JobOptions::stream_runs: main-path steps are recorded as they come, a
  // branch's rollouts shown as the traces' text (when the client takes them: JobSpec::reasoning).
  void SendRun(arbor::v1::RunRequest request, std::vector<uint64_t> ids) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Release(std::vector<uint64_t> ids) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  base::LogFields LogFieldsFor(std::string_view event, base::LogFields more) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<JobControl> Hold() override;
  void Move(absl::Status cause, bool forced) override ABSL_LOCKS_EXCLUDED(mu_);
  void Retry(uint64_t generation, bool move) override ABSL_LOCKS_EXCLUDED(mu_);
  void End(arbor::v1::FinishReason reason, std::string error) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const JobSpec spec_;
  const JobOptions options_;
  const JobEnvironment env_;
  const RunBuilder builder_;

  mutable absl::Mutex mu_;
  SearchTree tree_ ABSL_GUARDED_BY(mu_);
  JobLifecycle life_ ABSL_GUARDED_BY(mu_);  // QUEUED, RUNNING, then how it ended.
  // The worker and the Run in flight there, with the state of waiting and moving.
  WorkerSession session_ ABSL_GUARDED_BY(mu_);
  // Text, events, counts and timings as the client sees them.
  JobOutput output_ ABSL_GUARDED_BY(mu_);
  // The main sequence, its Runs and structural decisions, and the branch open on it.
  MainPath path_ ABSL_GUARDED_BY(mu_);
  // What the job does when its worker fails, runs out of KV or leaves.
  JobFailover failover_ ABSL_GUARDED_BY(mu_);

  // Side effects queued under mu_, run after it is released (action_queue.h).
  ActionQueue actions_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_JOB_H_
