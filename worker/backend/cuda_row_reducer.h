// The CUDA backend's row reductions (row_reduction.h) on the device. Once a step's logits and
// last-layer score rows are written, the fused logits pass (moments, top-K candidates, the probed
// token's rank, chunks merged: kernels/logit_stats_cuda.h) and the attention statistics of every
// reduced row (kernels/attention_stats_cuda.h) run on the step's stream, and their records — a
// few KB per row instead of ~1 MB of logits and scores — come back in one copy into pinned memory.
// After the step's one synchronisation, Finish turns them into RowReductions with the host's
// final combines (entropix::FinishLogitMetrics, entropix::CombineAttentionMetrics: a few dozen
// flops per row).
#ifndef ARBOR_WORKER_BACKEND_CUDA_ROW_REDUCER_H_
#define ARBOR_WORKER_BACKEND_CUDA_ROW_REDUCER_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "kernels/cuda/cuda_buffer.h"
#include "kernels/cuda/cuda_context.h"
#include "worker/backend/row_reduction.h"

namespace arbor::worker {

class CudaRowReducer {
 public:
  // One reduced row of a step.
  struct Row {
    RowReduction* out = nullptr;
    int32_t logit_row = 0;  // Its row in the step's logits.
    int32_t seq = 0;        // Its sequence in the step: its score-table and kv_len entries.
    int32_t keys = 0;       // That sequence's kv_len.
  };
  // The step's device data the reductions read.
  struct StepData {
    const float* logits = nullptr;  // [logit_rows, vocab]
    int64_t logit_rows = 0;
    float* const* score_table = nullptr;  // [sequences]: each one's [num_heads, kv_len] scores.
    const int32_t* kv_len = nullptr;      // [sequences]
  };

  // Whether the device path serves `request` (else the backend reduces the row on the host).
  static bool Serves(const ReductionRequest& request);

  CudaRowReducer(kernels::CudaContext* context, int64_t vocab, int64_t num_heads)
      : context_(context), vocab_(vocab), num_heads_(num_heads) {}

  // Enqueues the kernels and the copy back on the context's stream; `rows` must be non-empty.
  absl::Status Enqueue(std::span<const Row> rows, const StepData& step);
  // Once the stream has passed the copy: fills each row's RowReduction (the same `rows`).
  void Finish(std::span<const Row> rows) const;

 private:
  // Where the last Enqueue put each output in the pinned download buffer, in bytes.
  struct Layout {
    int64_t logit_rows = 0, top_k = 0, max_chunks = 0;
    size_t records = 0, top_values = 0, top_ids = 0, heads = 0, non_finite = 0, agreement = 0;
    size_t bytes = 0;
  };
  // A step's device buffers and, in bytes, where each array lies in them.
  struct Device {
    void* inputs = nullptr;
    size_t probes = 0, seq = 0, slots = 0;  // In inputs.
    void* workspace = nullptr;
    size_t moments = 0, first_bad = 0, probe_above = 0, cand_values = 0, cand_ids = 0;
    size_t partials = 0, chunk_bad = 0, log_norm = 0;  // In workspace.
    void* outputs = nullptr;                           // Laid out as Layout says.
  };

  // The step's sizes and output layout.
  Layout PlanLayout(std::span<const Row> rows, const StepData& step) const;
  // Uploads the rows' probes, sequences and slots; grows the workspace and outputs.
  absl::StatusOr<Device> Prepare(std::span<const Row> rows, const StepData& step,
                                 const Layout& layout);
  absl::Status LaunchLogits(const StepData& step, const Layout& layout, const Device& d);
  absl::Status LaunchAttention(int64_t num_rows, const StepData& step, const Layout& layout,
                               const Device& d);

  kernels::CudaContext* context_;
  int64_t vocab_;
  int64_t num_heads_;
  Layout layout_;
  kernels::CudaBuffer upload_{kernels::CudaBuffer::Memory::kPinnedHost};
  kernels::CudaBuffer inputs_, workspace_, outputs_;
  kernels::CudaBuffer download_{kernels::CudaBuffer::Memory::kPinnedHost};
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_BACKEND_CUDA_ROW_REDUCER_H_
