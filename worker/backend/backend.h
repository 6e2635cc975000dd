// The interface every model backend (CPU, CUDA) implements for the engine: one forward step
// over a batch of rows that mixes prefill chunks and decode rows, each reading and extending
// its sequence's paged KV, plus the block copies the KV cache asks for (copy-on-write).
//
// Backends hold the KV storage (kv/kv_storage.h); which sequence owns which block is decided
// by the KV cache (kv/kv_block_manager.h) and arrives here as block tables.
#ifndef ARBOR_WORKER_BACKEND_BACKEND_H_
#define ARBOR_WORKER_BACKEND_BACKEND_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "model/config.h"
#include "worker/backend/row_reduction.h"
#include "worker/kv/kv_storage.h"

namespace arbor::worker {

// One row of a forward step: the new tokens of one sequence.
struct ForwardRow {
  // New tokens, at positions start_pos, start_pos + 1, ...; non-empty, each in [0, vocab).
  std::span<const int32_t> tokens;
  // Tokens of the sequence whose K/V are already in the cache (positions 0 .. start_pos − 1).
  int32_t start_pos = 0;
  // The sequence's block table, covering at least start_pos + tokens.size() positions.
  std::span<const int32_t> block_table;
  // Optional: the next-token distribution after the last new token, reduced inside the forward
  // as its request asks (row_reduction.h). This is what the engine asks for.
  RowReduction* reduction = nullptr;
  // Debug and reference path, never the serving one: the full rows the reduction is computed
  // from, for tests that compare backends and tools that inspect a model. Optional [vocab]: the
  // logits after the last new token.
  float* logits = nullptr;
  // Optional [num_heads, start_pos + tokens.size()]: the last layer's scaled attention scores
  // s = q·k/√head_dim of the last new token, per query head over every key it sees.
  float* last_scores = nullptr;
};

// Receives named intermediates of a forward, [rows, cols] row-major fp32, so two backends can
// be compared tensor by tensor. Names: "embed"; per layer l: "layer<l>.attn_norm", ".q", ".k"
// (both after RoPE), ".v", ".attn" (attention output before o_proj), ".attn_out" (after
// o_proj), ".attn_residual" (residual stream after the attention add), ".mlp_norm",
// ".mlp_act" (SwiGLU output), ".mlp_out" (after down_proj); "final_norm"; "logits" (one row per
// row that asked for logits or a reduction, in row order). Rows of the per-token tensors are the
// step's tokens in row order.
using TensorTap =
    std::function<void(std::string_view name, const float* data, int64_t rows, int64_t cols)>;

class Backend : public KvStorage {
 public:
  virtual const model::ModelConfig& config() const = 0;
  // "cpu", "cuda", ...
  virtual std::string name() const = 0;
  // Runs the model over `rows`: writes each row's new K/V into its blocks, then fills the
  // requested reductions, logits and scores. A reduction's own failure (non-finite logits) is
  // reported in it, not by Forward. No two rows write the same KV slot. Every row's K/V is written
  // (per layer) before any row attends, so a row may read slots other rows of the step fill:
  // a prefix published to the tree this step, or the earlier rows of one sequence split into
  // consecutive one-token rows (teacher-forced scoring, a distribution after every token).
  // INVALID_ARGUMENT naming the row and field for bad input, before any state changes.
  virtual absl::Status Forward(std::span<const ForwardRow> rows, const TensorTap& tap = {}) = 0;

  // Asked after a Forward or CopyKvBlocks failed: OK when later calls may succeed (the error
  // belonged to that call), else why the backend can run nothing more (a CUDA context after an
  // illegal address). The engine then stops serving, and the worker must be restarted.
  virtual absl::Status Usable() { return absl::OkStatus(); }

  // Calls fn(i) for every i in [0, n), independent calls that may run concurrently. The engine
  // post-processes a step's rows (metrics, policy) here between forwards; a backend whose
  // forward runs on host threads lends them, since they would otherwise idle meanwhile.
  virtual void HostParallelFor(int64_t n, const std::function<void(int64_t)>& fn) {
    for (int64_t i = 0; i < n; ++i) fn(i);
  }
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_BACKEND_BACKEND_H_
