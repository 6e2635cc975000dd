// A BranchHost (coordinator/job/branch_host.h) for testing branch strategies without a Job: it
// owns a real SearchTree and RunBuilder made from a JobSpec, forks rollouts into the tree as Job
// does (the candidates drawn from the structural step, or scripted by the test), and records
// every Run, release, count and BranchResolved the strategy asks for. The test plays the worker:
// it answers each sent Run with a hand-built RunResponse (Answer), and the host keeps the length
// each sequence would have on a worker, so results can carry the right positions (Result) and a
// Run that forks a released or unknown sequence fails the test.
#ifndef ARBOR_TESTS_COORDINATOR_JOB_FAKE_BRANCH_HOST_H_
#define ARBOR_TESTS_COORDINATOR_JOB_FAKE_BRANCH_HOST_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arbor/v1/worker.pb.h"
#include "coordinator/job/branch_host.h"
#include "coordinator/job/branch_planner.h"
#include "coordinator/job/branch_strategy.h"
#include "coordinator/job/job_spec.h"
#include "coordinator/job/rollout.h"
#include "coordinator/job/run_builder.h"
#include "coordinator/tree/search_tree.h"

namespace arbor::coordinator::testing {

inline constexpr int32_t kHostVocab = 64;
inline constexpr int32_t kHostEos = 63;
inline constexpr uint64_t kMainSequence = 1;
inline constexpr uint64_t kFirstRolloutSequence = 100;  // NewSequenceId's first answer.

// A spec over a tiny vocabulary: prompt {1, 2, 3}, eos kHostEos, default policy (ROLLOUT).
JobSpec FakeHostSpec(int32_t max_tokens);

// Metrics with the given entropy and varentropy, every attention field 0.
arbor::v1::Metrics StepMetrics(float entropy, float varentropy);
// A sampled token step as a worker reports it, with `top_k` (best first) when given.
arbor::v1::StepResult TokenStep(int32_t position, int32_t token, float logprob,
                                const arbor::v1::Metrics& metrics,
                                std::vector<TokenAlternative> top_k = {},
                                arbor::v1::Strategy strategy = arbor::v1::STRATEGY_ARGMAX);
// A structural stop at `position` (no token) with the top-K a fork draws its candidates from;
// sampling parameters that let every token of the top-K qualify.
arbor::v1::StepResult StructuralStep(int32_t position, arbor::v1::Strategy strategy,
                                     std::vector<TokenAlternative> top_k,
                                     const arbor::v1::Metrics& metrics);

class FakeBranchHost final : public BranchHost {
 public:
  struct SentRun {
    arbor::v1::RunRequest request;
    std::vector<uint64_t> ids;
  };
  struct ForkCall {
    NodeId point = kNoNode;
    int32_t position = 0;  // Of the structural step.
    uint32_t rng_branch = 0;
    SequenceSource base;
    int32_t depth = 0;
    int32_t max_len = 0;
    int width = 0;
    std::vector<NodeId> candidates;  // The nodes made, in order.
  };
  struct Resolved {
    BranchResolution resolution;
    std::vector<float> scores;
    std::string reason;
  };

  // The tree holds `spec`'s prompt on kMainSequence; Runs ask for `top_k` alternatives.
  explicit FakeBranchHost(JobSpec spec, int32_t top_k = 16);

  // --- BranchHost ---------------------------------------------------------------------------
  const JobSpec& spec() const override { return spec_; }
  SearchTree& tree() override { return tree_; }
  const RunBuilder& builder() const override { return builder_; }
  PolicyBudgets Budgets() const override;
  int32_t Remaining() const override;
  bool IsStopToken(int32_t token) const override;
  uint32_t NewBranchId() override { return next_branch_id_++; }
  uint64_t NewSequenceId() override { return next_sequence_id_++; }
  void Count(arbor::v1::Strategy strategy) override { counts_.push_back(strategy); }
  std::string Decode(absl::Span<const int32_t> tokens) const override;
  absl::StatusOr<std::vector<Rollout>> Fork(NodeId point,
                                            const arbor::v1::StepResult& structural_step,
                                            uint32_t rng_branch, const SequenceSource& base,
                                            int32_t depth, int32_t max_len, int width) override;
  void SendRun(arbor::v1::RunRequest request, std::vector<uint64_t> ids) override;
  void Release(std::vector<uint64_t> ids) override;
  void EndTrace(uint64_t sequence) override { ended_traces_.push_back(sequence); }
  void EmitResolved(const BranchResolution& resolution, const std::vector<float>& scores,
                    const std::string& reason) override;

  // --- the test's side ----------------------------------------------------------------------
  // The next Fork calls take these candidates (in order) instead of drawing them.
  void ScriptCandidates(std::vector<TokenAlternative> candidates) {
    scripted_.push_back(std::move(candidates));
  }
  // Opens the top-level branch at the tail as a ROLLOUT or BEAM job does with a live main
  // sequence: forked from kMainSequence at the step's position, up to the fork width's
  // candidates, each with branch.max_len tokens (at most those the job has left).
  absl::StatusOr<std::vector<Rollout>> OpenMainBranch(const arbor::v1::StepResult& structural);
  // The same with the width and rollout length of `plan`, as MainPath::OpenBranch opens the fork
  // its planner planned (TRACE: TracePlanner::Plan).
  absl::StatusOr<std::vector<Rollout>> OpenMainBranch(const arbor::v1::StepResult& structural,
                                                      const ForkPlan& plan);
  // Records a generated main-path step as MainPath::RecordMainStep does (counted, committed to
  // the tree on kMainSequence, which holds one more token on the worker), so that a branch
  // opened after it sits below committed tokens. The planner's OnMainStep is the test's to call.
  absl::StatusOr<NodeId> CommitMainStep(const arbor::v1::StepResult& step);
  // The strategy's Send, as the job relays it; fails the test when it neither sends nor commits.
  BranchStrategy::Next Send(BranchStrategy& strategy);
  // Answers the Run in flight with `response` (one result per item, in item order, checked)
  // and hands it to the strategy's OnDone.
  BranchStrategy::Next Answer(BranchStrategy& strategy, const arbor::v1::RunResponse& response);
  // Ends the branch with `commit` as MainPath::CommitBranch does: the tree resolved at the
  // point, every other sequence of the branch (and the main one, if replaced) released.
  absl::StatusOr<BranchResolution> CommitBranch(const BranchStrategy& strategy,
                                                const BranchCommit& commit);

  // The length `sequence_id` has on the worker once the Runs sent so far are answered as far as
  // they are: the position its next token takes. -1 for a sequence the worker does not hold.
  int32_t Length(uint64_t sequence_id) const;
  // A result for `sequence_id` whose steps sample `tokens` (id, logprob) at its next positions,
  // each with `metrics`, ending for `stop`.
  arbor::v1::RunResult Result(uint64_t sequence_id,
                              const std::vector<std::pair<int32_t, float>>& tokens,
                              arbor::v1::StopReason stop, const arbor::v1::Metrics& metrics) const;

  const std::vector<SentRun>& runs() const { return runs_; }
  const arbor::v1::RunRequest& last_request() const { return runs_.back().request; }
  bool run_in_flight() const { return in_flight_; }
  // Every Release call, as called (empty ones too), and all ids released, in order.
  const std::vector<std::vector<uint64_t>>& release_calls() const { return release_calls_; }
  std::vector<uint64_t> released() const;
  const std::vector<arbor::v1::Strategy>& counts() const { return counts_; }
  int CountOf(arbor::v1::Strategy strategy) const;
  const std::vector<ForkCall>& forks() const { return forks_; }
  const std::vector<Resolved>& resolved() const { return resolved_; }
  // The sequences whose traces ended, in order (EndTrace).
  const std::vector<uint64_t>& ended_traces() const { return ended_traces_; }

  PolicyBudgets budgets;  // Inserts, backspaces and bans Budgets() reports.

 private:
  // Applies `item`'s source to the lengths the worker would hold; false (and a test failure)
  // for a source a worker would refuse.
  bool ApplySource(const arbor::v1::RunItem& item);

  const JobSpec spec_;
  SearchTree tree_;
  const RunBuilder builder_;
  uint32_t next_branch_id_ = 1;
  uint64_t next_sequence_id_ = kFirstRolloutSequence;
  std::deque<std::vector<TokenAlternative>> scripted_;
  std::map<uint64_t, int32_t> lengths_;  // Live sequences on the worker.
  bool in_flight_ = false;
  std::vector<SentRun> runs_;
  std::vector<std::vector<uint64_t>> release_calls_;
  std::vector<arbor::v1::Strategy> counts_;
  std::vector<ForkCall> forks_;
  std::vector<Resolved> resolved_;
  std::vector<uint64_t> ended_traces_;
};

}  // namespace arbor::coordinator::testing

#endif  // ARBOR_TESTS_COORDINATOR_JOB_FAKE_BRANCH_HOST_H_
