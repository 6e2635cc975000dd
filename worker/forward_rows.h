// What every backend does the same way before its forward pass: checking the rows of a step
// and the KV cache's block copies against the model and the KV pool, and turning the checkpoint's
// RoPE scaling into the ops' parameters. One copy, so the CPU and CUDA backends refuse the same
// input with the same words.
#ifndef ARBOR_WORKER_FORWARD_ROWS_H_
#define ARBOR_WORKER_FORWARD_ROWS_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "kernels/rope.h"
#include "model/config.h"
#include "worker/backend.h"

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

kernels::RopeScalingParams RopeScalingParamsOf(const model::RopeScaling& scaling);

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_FORWARD_ROWS_H_
