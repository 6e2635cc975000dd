// The BranchHost (branch_host.h) a job gives its branch strategies: the job's request, tree and
// Run builder, its policy budgets, forks opened in its tree (with their BranchOpened events and
// their traces opened in the job's reasoning stream),
// counts and events through its output, and its Runs and releases through the two callbacks
// the job provides. The job's main path (main_path.h) makes one over the job's parts and uses
// it only under the job's lock.
#ifndef ARBOR_COORDINATOR_JOB_JOB_BRANCH_HOST_H_
#define ARBOR_COORDINATOR_JOB_JOB_BRANCH_HOST_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arbor/v1/worker.pb.h"
#include "coordinator/job/branch_host.h"
#include "coordinator/job/branch_planner.h"
#include "coordinator/job/job_output.h"
#include "coordinator/job/job_spec.h"
#include "coordinator/job/rollout.h"
#include "coordinator/job/run_builder.h"
#include "coordinator/tree/search_tree.h"

namespace arbor::coordinator {

class JobBranchHost final : public BranchHost {
 public:
  // The job's parts; each must outlive the host.
  struct Parts {
    const JobSpec* spec = nullptr;
    SearchTree* tree = nullptr;
    const RunBuilder* builder = nullptr;
    BranchPlanner* planner = nullptr;
    JobOutput* output = nullptr;
    const PolicyBudgets* used = nullptr;  // What the main path spent of the budgets.
    std::function<uint64_t()> next_sequence_id;
    std::function<std::string(absl::Span<const int32_t>)> decode;
    std::function<void(arbor::v1::RunRequest, std::vector<uint64_t>)> send_run;
    std::function<void(std::vector<uint64_t>)> release;
  };

  explicit JobBranchHost(Parts parts) : parts_(std::move(parts)) {}

  const JobSpec& spec() const override { return *parts_.spec; }
  SearchTree& tree() override { return *parts_.tree; }
  const RunBuilder& builder() const override { return *parts_.builder; }
  PolicyBudgets Budgets() const override;
  int32_t Remaining() const override;
  bool IsStopToken(int32_t token) const override { return parts_.spec->IsStopToken(token); }
  uint32_t NewBranchId() override { return parts_.planner->NewBranchId(); }
  uint64_t NewSequenceId() override { return parts_.next_sequence_id(); }
  void Count(arbor::v1::Strategy strategy) override { parts_.output->Count(strategy); }
  std::string Decode(absl::Span<const int32_t> tokens) const override {
    return parts_.decode(tokens);
  }
  absl::StatusOr<std::vector<Rollout>> Fork(NodeId point,
                                            const arbor::v1::StepResult& structural_step,
                                            uint32_t rng_branch, const SequenceSource& base,
                                            int32_t depth, int32_t max_len, int width) override;
  void SendRun(arbor::v1::RunRequest request, std::vector<uint64_t> ids) override {
    parts_.send_run(std::move(request), std::move(ids));
  }
  void Release(std::vector<uint64_t> ids) override { parts_.release(std::move(ids)); }
  void EndTrace(uint64_t sequence) override { parts_.output->reasoning().End(sequence); }
  void EmitResolved(const BranchResolution& resolution, const std::vector<float>& scores,
                    const std::string& reason) override {
    parts_.output->SendResolved(resolution, scores, reason);
  }

 private:
  Parts parts_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_JOB_BRANCH_HOST_H_
