// CUDA launcher for paged attention (see paged_attention.h for the contract), prefill/extend and
// decode rows in one launch. One CTA per (query token, kv head, split) serves the whole GQA group
// of that kv head, so each K/V row is read once per group, in tiles with an online softmax.
//
// Split-K: a decode step has too few (token, kv head) pairs to fill the device, so long contexts
// are cut into `num_splits` key ranges whose partial (max, sum, unnormalised output) go to a
// workspace and are combined by a second kernel. Limits: head_dim a multiple of 8 (K/V are read 8
// dims per 16-byte load) and ≤ 256, query heads per kv head ≤ 8 (Llama 3: 64·4, 128·4) — else
// cudaErrorInvalidValue.
#ifndef ARBOR_KERNELS_PAGED_ATTENTION_CUDA_H_
#define ARBOR_KERNELS_PAGED_ATTENTION_CUDA_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/paged_attention.h"

namespace arbor::kernels {

// Cascade attention for sibling branches: decode queries whose sequences share a prefix of their
// block tables (the same physical blocks) are grouped, and each group's prefix keys are read once
// for all its queries — one CTA per (group, kv head, prefix split) stages every member's query
// heads in shared memory and scores them against each tile of K and V as a small register-tiled
// matrix product — instead of once per sequence. Each query's own keys (from key_begin on) go
// through the plain kernel; the prefix and own partials merge by log-sum-exp in the combine kernel.
// Every query token of the step must be in exactly one group (a group of one with prefix_len 0
// reads no prefix), and each member's prefix must lie strictly below its position (decode rows:
// prefix_len < kv_len).
struct CascadeGroups {
  int64_t num_groups = 0;                // 0: no cascade.
  const int32_t* group_start = nullptr;  // [num_groups + 1] offsets into `tokens`.
  const int32_t* tokens = nullptr;       // Each group's query tokens, group after group.
  const int32_t* seq = nullptr;         // [num_groups] a member whose block table holds the prefix.
  const int32_t* prefix_len = nullptr;  // [num_groups] shared prefix keys.
  const int32_t* key_begin = nullptr;   // [num_seqs] each sequence's group's prefix_len.
  int64_t num_splits = 1;               // Key ranges of each group's prefix.
  int64_t max_members = 0;              // Most tokens in one group (≤ CascadeMaxMembers).
};

// (member, query head) pairs one cascade CTA serves: its threads own 4 pairs per 8 lanes.
inline constexpr int64_t kCascadeMaxPairs = 128;
// Most query tokens one cascade group may hold for `group` query heads per kv head.
inline int64_t CascadeMaxMembers(int64_t group) { return kCascadeMaxPairs / group; }

struct PagedAttentionLaunch {
  int64_t num_tokens = 0;      // batch.q_start[num_seqs], known on the host.
  int64_t num_splits = 1;      // Key ranges per query; 1 (without cascade) writes `out` directly.
  float* workspace = nullptr;  // PagedAttentionWorkspaceFloats(...) floats when splits > 1.
  CascadeGroups cascade;
  // The block-wide kernel even where the warp-tiled one serves (tests and benchmarks compare).
  bool block_kernel = false;
  // Keys per split, a multiple of kPagedAttentionTile, or 0. Set, split s of every query covers
  // keys [s·split_keys, (s + 1)·split_keys) of its own (empty past them), so a query's partials —
  // and its output, their merge in split order — depend on its own keys alone, never on the
  // batch (--numerics=invariant; num_splits must cover the longest query). 0: each query's keys
  // cut into num_splits equal ranges, as many as fill the device for this batch.
  int64_t split_keys = 0;
};

// Keys per split unit: a split's key range is a whole number of these.
inline constexpr int64_t kPagedAttentionTile = 128;

// The split size of batch-invariant launches: 4 tiles, so a 4,096-key decode row still spreads
// over 8 splits per kv head, and a 512-token prefill's partial rows stay within
// PagedAttentionWorkspaceFloats(512, heads, head_dim, ⌈context / 512⌉).
inline constexpr int64_t kInvariantSplitKeys = 512;
static_assert(kInvariantSplitKeys % kPagedAttentionTile == 0);

// Splits of kInvariantSplitKeys that cover a batch whose longest query sees max_keys keys.
inline int64_t InvariantAttentionSplits(int64_t max_keys) {
  return max_keys > kInvariantSplitKeys
             ? (max_keys + kInvariantSplitKeys - 1) / kInvariantSplitKeys
             : 1;
}

// Key range [begin, end) of `split` for a query seeing n_keys keys: split_keys each when set,
// else num_splits equal whole tiles; the last ones possibly empty.
__host__ __device__ inline void PagedAttentionSplitRange(int64_t n_keys, int64_t num_splits,
                                                         int64_t split_keys, int64_t split,
                                                         int64_t* begin, int64_t* end) {
  const int64_t tiles = (n_keys + kPagedAttentionTile - 1) / kPagedAttentionTile;
  const int64_t per_split =
      split_keys > 0 ? split_keys : (tiles + num_splits - 1) / num_splits * kPagedAttentionTile;
  *begin = per_split * split < n_keys ? per_split * split : n_keys;
  *end = *begin + per_split < n_keys ? *begin + per_split : n_keys;
}

// Whether the warp-tiled kernel serves this shape (head_dim 64 or 128, ≤ 8 query heads per kv
// head); the block-wide kernel serves the rest.
bool WarpAttentionServes(int64_t head_dim, int64_t group);

// Partial rows per query: the plain kernel's splits, then the cascade's prefix splits.
__host__ __device__ inline int64_t TotalSplits(const PagedAttentionLaunch& launch) {
  return launch.num_splits + (launch.cascade.num_groups > 0 ? launch.cascade.num_splits : 0);
}

// Floats of workspace a launch with these sizes needs (0 without splits); `num_splits` counts
// every partial row per query (TotalSplits).
inline int64_t PagedAttentionWorkspaceFloats(int64_t num_tokens, int64_t num_heads,
                                             int64_t head_dim, int64_t num_splits) {
  return num_splits > 1 ? num_tokens * num_splits * num_heads * (head_dim + 2) : 0;
}

// Prefix splits that fill a device of `multiprocessors` SMs for `num_groups` groups.
int64_t CascadeSplits(int64_t num_groups, int64_t num_kv_heads, int64_t max_prefix_len,
                      int multiprocessors);

// Splits that fill a device of `multiprocessors` SMs (about two CTAs each) without cutting
// ranges below one tile of keys: 1 for prefill-sized batches, more for few long decode rows.
int64_t PagedAttentionSplits(int64_t num_tokens, int64_t num_kv_heads, int64_t max_kv_len,
                             int multiprocessors);

// All pointers in `params` (batch arrays and last_scores' table included) are device pointers.
// Asynchronous on `stream`.
cudaError_t LaunchPagedAttention(const PagedAttentionParams& params,
                                 const PagedAttentionLaunch& launch, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_PAGED_ATTENTION_CUDA_H_
