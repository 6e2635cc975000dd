// What every backend does the same way before its forward pass: checking the rows of a step
// and the KV cache's block copies against the model and the KV pool, laying the rows out in the
// paged (CSR) form the ops take, and turning the checkpoint's RoPE scaling into the ops'
// parameters. One copy, so the CPU and CUDA backends refuse the same input with the same words
// and read the same batch.
#ifndef ARBOR_WORKER_BACKEND_FORWARD_ROWS_H_
#define ARBOR_WORKER_BACKEND_FORWARD_ROWS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "kernels/paged_kv.h"
#include "kernels/rope.h"
#include "model/config.h"
#include "worker/backend/backend.h"

namespace arbor::worker {

// INVALID_ARGUMENT naming the row and field: empty tokens, a token outside [0, vocab_size), a
// reduction request that cannot be served, a negative start_pos, a block table too short for the
// row's positions, or a block id outside [0, kv_blocks).
absl::Status ValidateForwardRows(std::span<const ForwardRow> rows, int32_t vocab_size,
                                 int32_t block_size, int32_t kv_blocks);

// INVALID_ARGUMENT for a copy whose blocks lie outside [0, kv_blocks) or whose token count lies
// outside [0, block_size]; checked for every copy before a backend performs any.
absl::Status ValidateBlockCopies(std::span<const BlockCopy> copies, int32_t block_size,
                                 int32_t kv_blocks);

// A step's rows in the paged (CSR) form of kernels/paged_kv.h, and where each row's outputs are.
struct StepBatch {
  std::vector<int32_t> q_start = {0};      // [rows + 1]
  std::vector<int32_t> kv_len;             // [rows]
  std::vector<int32_t> block_start = {0};  // [rows + 1]
  std::vector<int32_t> block_ids;          // Each row's blocks covering its kv_len.
  std::vector<int32_t> tokens;             // [t] the new tokens, row after row.
  std::vector<int32_t> positions;          // [t] their positions.
  // Token index of each row's last token, for the rows that want logits or a reduction, in row
  // order (the rows the logits projection takes).
  std::vector<int32_t> logit_rows;
  int32_t max_kv_len = 0;
  bool decode = true;  // Every row has exactly one new token.

  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }
  // Host pointers into this struct; valid while it lives unchanged.
  kernels::PagedBatch View() const {
    return {static_cast<int64_t>(kv_len.size()), q_start.data(), kv_len.data(), block_start.data(),
            block_ids.data()};
  }
};

// `rows` (already validated) laid out for the ops.
StepBatch MakeStepBatch(std::span<const ForwardRow> rows, int32_t block_size);

kernels::RopeScalingParams RopeScalingParamsOf(const model::RopeScaling& scaling);

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_BACKEND_FORWARD_ROWS_H_
