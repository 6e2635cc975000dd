// Which decode rows of a step share a prefix of their KV blocks, for cascade attention
// (kernels/paged_attention_cuda.h's CascadeGroups): sibling branches of a search fork one
// sequence, so their block tables start with the same physical blocks, and reading those blocks
// once per group instead of once per sibling is what makes wide branching cheap.
//
// Rows are bucketed by their first block; a bucket of two or more shares its longest common
// run of whole blocks (each member keeping at least its newest key for itself), cut into groups
// of at most `max_members`; a group of fewer than `min_members` does not cascade (reading the
// prefix once pays only when enough queries share the read). Every row ends up in exactly one
// group: the others in groups of one that read no prefix. Pure host code, so it is tested
// without a device.
#ifndef ARBOR_WORKER_BACKEND_CASCADE_PLAN_H_
#define ARBOR_WORKER_BACKEND_CASCADE_PLAN_H_

#include <cstdint>
#include <vector>

#include "worker/backend/forward_rows.h"

namespace arbor::worker {

struct CascadePlan {
  std::vector<int32_t> group_start = {0};  // [groups + 1] offsets into tokens.
  std::vector<int32_t> tokens;             // Each group's query tokens.
  std::vector<int32_t> seq;                // [groups] a member sequence.
  std::vector<int32_t> prefix_len;         // [groups] shared prefix keys.
  std::vector<int32_t> key_begin;          // [rows] each row's group's prefix_len.
  int32_t max_members = 0;
  int32_t max_prefix_len = 0;

  int64_t num_groups() const { return static_cast<int64_t>(seq.size()); }
};

// The plan for `batch`, or nothing (an empty plan: no group of min_members (at least 2) shares a
// block) for steps that are not all decode rows or whose rows share nothing.
CascadePlan PlanCascade(const StepBatch& batch, int32_t block_size, int32_t max_members,
                        int32_t min_members = 2);

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_BACKEND_CASCADE_PLAN_H_
