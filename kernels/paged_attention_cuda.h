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

struct PagedAttentionLaunch {
  int64_t num_tokens = 0;      // batch.q_start[num_seqs], known on the host.
  int64_t num_splits = 1;      // Key ranges per query; 1 writes `out` directly.
  float* workspace = nullptr;  // PagedAttentionWorkspaceFloats(...) floats when num_splits > 1.
};

// Floats of workspace a launch with these sizes needs (0 without splits).
inline int64_t PagedAttentionWorkspaceFloats(int64_t num_tokens, int64_t num_heads,
                                             int64_t head_dim, int64_t num_splits) {
  return num_splits > 1 ? num_tokens * num_splits * num_heads * (head_dim + 2) : 0;
}

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
