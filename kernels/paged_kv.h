// The paged KV layout shared by the KV-append and attention ops (FlashInfer-style, CSR batch).
//
// One layer's cache is a pool of blocks of `block_size` token slots; slot s = block·block_size +
// offset holds num_kv_heads·head_dim floats of K (and of V) at k + s·num_kv_heads·head_dim.
// A batch is a list of sequences; sequence s contributes the query tokens
// [q_start[s], q_start[s+1]) of the step, which are its LAST tokens: with n_s new tokens and
// kv_len[s] tokens in total (cached + new), new token j sits at position kv_len[s] − n_s + j.
// Its block table is block_ids[block_start[s] .. block_start[s+1]), position p living in block
// table[p / block_size] at offset p % block_size. Framework-free (shared with CUDA kernels).
#ifndef ARBOR_KERNELS_PAGED_KV_H_
#define ARBOR_KERNELS_PAGED_KV_H_

#include <cstdint>

namespace arbor::kernels {

struct PagedKvLayer {
  float* k = nullptr;  // [num_blocks, block_size, num_kv_heads, head_dim]
  float* v = nullptr;  // Same shape as k.
  int64_t num_blocks = 0;
  int64_t block_size = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  // bf16 pools of the same shape, used instead of k and v when set (half the bytes per token).
  // K/V are rounded to bf16 (nearest, ties to even) when appended; attention widens them exactly
  // and computes in fp32.
  uint16_t* k_bf16 = nullptr;
  uint16_t* v_bf16 = nullptr;

  bool bf16() const { return k_bf16 != nullptr; }
};

struct PagedBatch {
  int64_t num_seqs = 0;
  const int32_t* q_start = nullptr;      // [num_seqs + 1], q_start[0] = 0.
  const int32_t* kv_len = nullptr;       // [num_seqs], >= q_start[s+1] − q_start[s].
  const int32_t* block_start = nullptr;  // [num_seqs + 1] offsets into block_ids.
  const int32_t* block_ids = nullptr;    // Concatenated block tables.
};

// Slot of position `pos` of sequence `seq`.
inline int64_t PagedSlot(const PagedBatch& batch, int64_t block_size, int64_t seq, int64_t pos) {
  return int64_t{batch.block_ids[batch.block_start[seq] + pos / block_size]} * block_size +
         pos % block_size;
}

// Position of query token `token` (an index into the step's tokens) of sequence `seq`.
inline int64_t PagedPosition(const PagedBatch& batch, int64_t seq, int64_t token) {
  return batch.kv_len[seq] - (batch.q_start[seq + 1] - batch.q_start[seq]) +
         (token - batch.q_start[seq]);
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_PAGED_KV_H_
