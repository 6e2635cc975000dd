// Causal multi-head attention of the step's queries over the paged KV cache, for prefill and
// extend chunks (many queries per sequence) and decode rows (one) in one call. Query token at
// position p of sequence s sees keys 0..p of s (its own K/V must already be appended). GQA:
// query head h reads kv head h / (num_heads / num_kv_heads).
//
// Optionally also emits, for the LAST query of chosen sequences, the scaled scores
// s = q·k·scale per query head over its visible keys, from which the engine computes the
// entropix attention metrics (their math lives in entropix/, not here).
// Framework-free: shared by the CPU implementation (paged_attention_ref.cc) and CUDA kernels.
#ifndef ARBOR_KERNELS_PAGED_ATTENTION_H_
#define ARBOR_KERNELS_PAGED_ATTENTION_H_

#include <cstdint>

#include "kernels/paged_kv.h"

namespace arbor::kernels {

class ThreadPool;

struct PagedAttentionParams {
  PagedBatch batch;
  PagedKvLayer cache;        // Read only.
  const float* q = nullptr;  // [num_tokens, num_heads, head_dim], token t at q + t·q_stride.
  float* out = nullptr;      // [num_tokens, num_heads, head_dim], token t at out + t·out_stride.
  int64_t q_stride = 0;
  int64_t out_stride = 0;
  int64_t num_heads = 0;  // A multiple of cache.num_kv_heads.
  float scale = 1.0f;     // Usually 1/sqrt(head_dim).
  // Optional, [num_seqs]: entry s null, or [num_heads, kv_len[s]] (row stride kv_len[s])
  // receiving the scaled scores of sequence s's last query.
  float* const* last_scores = nullptr;
};

// CPU implementation, fp32, threaded over (token, kv head) when `pool` is given.
void PagedAttentionRef(const PagedAttentionParams& params, ThreadPool* pool);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_PAGED_ATTENTION_H_
