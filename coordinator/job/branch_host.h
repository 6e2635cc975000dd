// What a branch strategy (branch_strategy.h) may ask of the job it runs in: the request, the
// tree, the worker, the job's counters and events. JobBranchHost (job_branch_host.h) implements
// it over the job's parts; a strategy calls it only from its own Send/OnDone, under the job's
// lock, so it never sees the job's worker session, failover or text stream.
#ifndef ARBOR_COORDINATOR_JOB_BRANCH_HOST_H_
#define ARBOR_COORDINATOR_JOB_BRANCH_HOST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arbor/v1/worker.pb.h"
#include "coordinator/job/job_spec.h"
#include "coordinator/job/rollout.h"
#include "coordinator/job/run_builder.h"
#include "coordinator/tree/search_tree.h"

namespace arbor::coordinator {

class BranchHost {
 public:
  virtual const JobSpec& spec() const = 0;
  virtual SearchTree& tree() = 0;
  virtual const RunBuilder& builder() const = 0;
  // The policy's budgets as the committed path stands (a rollout sets generated_before).
  virtual PolicyBudgets Budgets() const = 0;
  virtual int32_t Remaining() const = 0;  // Tokens the job may still generate.
  virtual bool IsStopToken(int32_t token) const = 0;
  virtual uint32_t NewBranchId() = 0;  // The RNG branch of a new rollout.
  virtual uint64_t NewSequenceId() = 0;
  virtual void Count(arbor::v1::Strategy strategy) = 0;
  // Text of a token sequence, as the job's text is decoded.
  virtual std::string Decode(absl::Span<const int32_t> tokens) const = 0;
  // Opens a branch at `point` (the tail, or a rollout leaf) from `structural_step`: draws up to
  // `width` candidates (RNG branch `rng_branch`), one rollout per candidate at `depth` whose
  // sequence is `base` plus its candidate, with `max_len` tokens at most; the tree and the
  // BranchOpened event. Empty when there is no candidate (the caller falls back).
  virtual absl::StatusOr<std::vector<Rollout>> Fork(NodeId point,
                                                    const arbor::v1::StepResult& structural_step,
                                                    uint32_t rng_branch, const SequenceSource& base,
                                                    int32_t depth, int32_t max_len, int width) = 0;
  // Sends one Run whose items hold the sequences `ids`, in order; its response comes back
  // through the strategy's OnDone.
  virtual void SendRun(arbor::v1::RunRequest request, std::vector<uint64_t> ids) = 0;
  virtual void Release(std::vector<uint64_t> ids) = 0;  // Sequences done with, on the worker.
  // The rollout of `sequence` takes no more tokens (it stopped, or goes on in nested rollouts):
  // the client's view of the running traces moves on from it (reasoning_stream.h).
  virtual void EndTrace(uint64_t sequence) = 0;
  // The BranchResolved event of a resolution in the tree.
  virtual void EmitResolved(const BranchResolution& resolution, const std::vector<float>& scores,
                            const std::string& reason) = 0;

 protected:
  ~BranchHost() = default;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_BRANCH_HOST_H_
