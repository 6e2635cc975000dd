// Opening a fork in a job's tree: one FORCED candidate node below the branch point per chosen
// token, and the rollout that continues each — its own sequence (the base sequence plus its
// candidate), its score seeded with the structural step, done at once when the candidate ends
// the sequence or the rollout may run one token only. The job's BranchHost::Fork and the tests'
// fake host open forks with this one piece.
#ifndef ARBOR_COORDINATOR_JOB_FORK_H_
#define ARBOR_COORDINATOR_JOB_FORK_H_

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arbor/v1/worker.pb.h"
#include "coordinator/job/job_spec.h"
#include "coordinator/job/rollout.h"
#include "coordinator/tree/search_tree.h"
#include "entropix/sampler.h"

namespace arbor::coordinator {

// Where a fork opens and how far its rollouts go.
struct ForkSite {
  NodeId point = kNoNode;  // The branch point: the tail, or a rollout's leaf.
  SequenceSource base;     // The sequence each rollout continues, before its candidate.
  int32_t depth = 1;       // Candidates from here up to the committed path (1: a main fork).
  int32_t max_len = 0;     // Tokens a rollout may have, its candidate included.
};

// Opens the branch at `site.point` with one rollout per `candidates` entry (in order), from
// `structural_step`; `new_sequence` and `new_branch` number each rollout's sequence and RNG
// branch. The rollouts' candidate and leaf are the new nodes.
absl::StatusOr<std::vector<Rollout>> OpenFork(SearchTree& tree, const JobSpec& spec,
                                              const ForkSite& site,
                                              const arbor::v1::StepResult& structural_step,
                                              absl::Span<const entropix::SampledToken> candidates,
                                              absl::FunctionRef<uint64_t()> new_sequence,
                                              absl::FunctionRef<uint32_t()> new_branch);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_FORK_H_
