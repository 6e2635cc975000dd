// What one query token of a paged attention launch attends, shared by the block-wide and the
// warp-tiled kernels: its sequence, how many keys it sees, the key range of one split (after the
// shared prefix, which the cascade kernel reads under cascade), and where its scores go when it
// is its sequence's last query. Include only from the attention's .cu files.
#ifndef ARBOR_KERNELS_PAGED_ATTENTION_QUERY_CUDA_H_
#define ARBOR_KERNELS_PAGED_ATTENTION_QUERY_CUDA_H_

#include "kernels/paged_attention_cuda.h"
#include "kernels/paged_kv_cuda.h"

namespace arbor::kernels {

struct QueryKeys {
  int64_t seq = 0;
  int64_t n_keys = 0;           // Keys the query sees: its position + 1.
  int64_t begin = 0, end = 0;   // This split's keys.
  float* scores_out = nullptr;  // [num_heads, n_keys], or null.
};

__device__ inline QueryKeys QueryKeysOf(const PagedAttentionParams& p,
                                        const PagedAttentionLaunch& launch, int64_t token,
                                        int64_t split) {
  QueryKeys q;
  q.seq = DeviceSeqOfToken(p.batch, token);
  q.n_keys = DevicePagedPosition(p.batch, q.seq, token) + 1;
  // With cascade, the shared prefix is the prefix kernel's: the query's own keys come after it.
  const int64_t own = launch.cascade.key_begin != nullptr ? launch.cascade.key_begin[q.seq] : 0;
  PagedAttentionSplitRange(q.n_keys - own, launch.num_splits, launch.split_keys, split, &q.begin,
                           &q.end);
  q.begin += own;
  q.end += own;
  if (p.last_scores != nullptr && token == p.batch.q_start[q.seq + 1] - 1) {
    q.scores_out = p.last_scores[q.seq];
  }
  return q;
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_PAGED_ATTENTION_QUERY_CUDA_H_
