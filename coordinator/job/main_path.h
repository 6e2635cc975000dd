// A job's main path: the committed line it generates and the branch open on it, if any. It sends
// the main sequence's Runs (streamed from the worker step by step, JobOptions::stream_runs) and
// records their steps into the tree, sending each to the client as it arrives; applies the
// structural decisions a step stops on — INSERT (append the thinking tokens), BACKSPACE (remove
// the last generated token, ban it, re-draw its position from its stored distribution) and
// BRANCH (fork the candidates and hand them to the strategy the planner opens,
// branch_planner.h) — and runs the open branch's strategy through a JobBranchHost until it
// names the rollout to commit. It holds the main sequence (main_sequence.h), the planner and
// open branch, and what the main path spent of the policy's budgets; it reaches the rest of
// the job through JobControl (job_control.h). The job holds one under its lock.
#ifndef ARBOR_COORDINATOR_JOB_MAIN_PATH_H_
#define ARBOR_COORDINATOR_JOB_MAIN_PATH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "arbor/v1/worker.pb.h"
#include "coordinator/job/branch_planner.h"
#include "coordinator/job/branch_strategy.h"
#include "coordinator/job/job_branch_host.h"
#include "coordinator/job/job_control.h"
#include "coordinator/job/job_options.h"
#include "coordinator/job/job_output.h"
#include "coordinator/job/job_spec.h"
#include "coordinator/job/main_sequence.h"
#include "coordinator/job/run_builder.h"
#include "coordinator/tree/search_tree.h"

namespace arbor::coordinator {

class MainPath {
 public:
  // The job's parts; each must outlive the main path.
  struct Parts {
    const JobSpec* spec = nullptr;
    const JobOptions* options = nullptr;
    const RunBuilder* builder = nullptr;
    SearchTree* tree = nullptr;
    JobOutput* output = nullptr;
    JobControl* control = nullptr;
    std::function<uint64_t()> next_sequence_id;
    std::function<std::string(absl::Span<const int32_t>)> decode;
  };

  // `main_sequence` is the tree's; its first Run prefills the prompt.
  MainPath(Parts parts, uint64_t main_sequence, std::unique_ptr<BranchPlanner> planner);
  MainPath(const MainPath&) = delete;
  MainPath& operator=(const MainPath&) = delete;

  // The next Run: the main sequence's, or the open branch's (or its commit).
  void Send();
  // The response to the Run sent. Returns the worker's failure the main-path Run stopped on
  // (KV exhausted mid-run, cancelled), for the job to fail over; OK otherwise.
  absl::Status OnDone(const arbor::v1::RunResponse& response);
  // Steps of the Run in flight the worker streamed before it answered: a main-path Run's are
  // recorded and sent to the client now (OnDone skips them), a branch's shown as traces.
  void OnProgress(const arbor::v1::RunProgress& progress);

  bool branch_open() const { return branch_ != nullptr; }
  // The job ended: the sequences it holds on the worker, for it to release.
  std::vector<uint64_t> EndSequences();
  // Releases every sequence the job holds on its worker; the next Run prefills the committed
  // path (and each live rollout) afresh.
  void ResetSequences();
  // RESOURCE_EXHAUSTED with a branch open: the worker cannot hold the search as wide as it is,
  // and waiting would not make room its own rollouts take (a job deadlocked on its own KV). The
  // branch is abandoned (its rollouts pruned and released), the branch point takes its fallback
  // sample, and later forks are at most half as wide; under 2, the job stops branching.
  void ShrinkSearch(const absl::Status& status);

 private:
  void SendMainRun();
  // The main-path Run's result; returns as OnDone does.
  absl::Status OnMainDone(const arbor::v1::RunResult& result);
  // Records one main-path step; false when the job finished on it.
  bool RecordMainStep(const arbor::v1::StepResult& step);
  // Emits the token event of the committed node `id` and checks the stop strings; false when
  // the job finished on a stop string.
  bool EmitCommitted(NodeId id);
  void ApplyStructural(const arbor::v1::StepResult& step);
  void ApplyInsert(const arbor::v1::StepResult& step);
  void ApplyBackspace(const arbor::v1::StepResult& step);
  void OpenBranch(const arbor::v1::StepResult& step);
  // The coordinator cannot apply the structural decision: decode the same position once more
  // with structural stops off, so the worker takes the row's fallback sample.
  void Fallback();

  // The open branch's strategy (branch_strategy.h): its next Run, or its commit; the response
  // to the Run it sent.
  void SendBranch();
  void OnBranchDone(const arbor::v1::RunResponse& response);
  // Ends the open branch with `commit`'s winner: tree, releases, events, committed tokens; the
  // main path continues as it says.
  void CommitBranch(BranchCommit commit);
  // The rollouts' steps in `results` as the text of the traces the client sees.
  void ShowTraces(const google::protobuf::RepeatedPtrField<arbor::v1::RunResult>& results);
  std::vector<uint64_t> LiveSequences() const;

  const Parts parts_;
  // The main sequence on the worker, what its next Run must do to it first, and that Run's
  // own state.
  MainSequence main_;
  // How forks open and which strategy decides them, with what it keeps across the job; how
  // wide forks may still be (ShrinkSearch halves it; below 2 the main items claim the policy's
  // deepest branch depth, where forks are blocked).
  const std::unique_ptr<BranchPlanner> planner_;
  std::unique_ptr<BranchStrategy> branch_;  // The open branch, if any.
  // What the main path has spent of the policy's budgets (inserts, backspaces and their bans);
  // generated_before is filled in when asked (Budgets()).
  PolicyBudgets used_;
  // What the branch strategies reach the job through (job_branch_host.h).
  JobBranchHost host_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_MAIN_PATH_H_
