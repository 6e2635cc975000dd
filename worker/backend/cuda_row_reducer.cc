#include "worker/backend/cuda_row_reducer.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "entropix/attention_metrics.h"
#include "entropix/logit_metrics.h"
#include "entropix/top_k.h"
#include "kernels/attention_stats_cuda.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/logit_stats_cuda.h"

namespace arbor::worker {
namespace {

using kernels::AttentionHeadPartial;
using kernels::LogitRecord;

// Merged heads are copied straight into the host's state type.
static_assert(sizeof(AttentionHeadPartial) == sizeof(entropix::AttentionHeadState));
static_assert(offsetof(AttentionHeadPartial, abs_sum) ==
              offsetof(entropix::AttentionHeadState, abs_sum));
static_assert(offsetof(AttentionHeadPartial, count) ==
              offsetof(entropix::AttentionHeadState, count));

// Lays out consecutive arrays in one allocation, each 256-byte aligned.
class Carver {
 public:
  template <typename T>
  size_t Take(int64_t count) {
    const size_t at = bytes_;
    bytes_ += (static_cast<size_t>(std::max<int64_t>(count, 0)) * sizeof(T) + 255) / 256 * 256;
    return at;
  }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
};

template <typename T>
T* At(void* base, size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}
template <typename T>
const T* At(const void* base, size_t offset) {
  return reinterpret_cast<const T*>(static_cast<const char*>(base) + offset);
}

int32_t Slots(const ReductionRequest& request, int32_t keys) {
  return request.attention_mode == entropix::AttentionMode::kReference
             ? std::max(request.reference_len, keys)
             : keys;
}

}  // namespace

bool CudaRowReducer::Serves(const ReductionRequest& request) {
  // Rows with logit processors or a constraint's mask go to the host path, which applies them to
  // the downloaded row.
  return request.candidates <= kernels::kLogitStatsMaxTopK && request.adjustments.empty() &&
         request.allowed.empty();
}

CudaRowReducer::Layout CudaRowReducer::PlanLayout(std::span<const Row> rows,
                                                  const StepData& step) const {
  Layout layout;
  layout.logit_rows = step.logit_rows;
  int32_t max_keys = 1;
  for (const Row& row : rows) {
    layout.top_k = std::max<int64_t>(layout.top_k, row.out->request.candidates);
    max_keys = std::max(max_keys, row.keys);
  }
  layout.top_k = std::min(layout.top_k, vocab_);
  layout.max_chunks = kernels::AttentionStatsChunks(max_keys);
  const int64_t num_rows = static_cast<int64_t>(rows.size());
  // The outputs lie back to back, so one copy brings them all.
  Carver out;
  layout.records = out.Take<LogitRecord>(step.logit_rows);
  layout.top_values = out.Take<float>(step.logit_rows * layout.top_k);
  layout.top_ids = out.Take<int32_t>(step.logit_rows * layout.top_k);
  layout.heads = out.Take<AttentionHeadPartial>(num_rows * num_heads_);
  layout.non_finite = out.Take<int32_t>(num_rows);
  layout.agreement = out.Take<double>(num_rows * layout.max_chunks);
  layout.bytes = out.bytes();
  return layout;
}

absl::StatusOr<CudaRowReducer::Device> CudaRowReducer::Prepare(std::span<const Row> rows,
                                                               const StepData& step,
                                                               const Layout& layout) {
  cudaStream_t stream = context_->stream();
  const int64_t num_rows = static_cast<int64_t>(rows.size());
  const int64_t chunks = kernels::LogitStatsChunks(vocab_);
  Device d;
  // Inputs: a probe per logits row (−1 for rows without one), the sequence and slots per row.
  Carver in;
  d.probes = in.Take<int32_t>(step.logit_rows);
  d.seq = in.Take<int32_t>(num_rows);
  d.slots = in.Take<int32_t>(num_rows);
  ASSIGN_OR_RETURN(void* upload, upload_.Grow(in.bytes(), stream, "reduction inputs (pinned)"));
  std::fill_n(At<int32_t>(upload, d.probes), step.logit_rows, -1);
  for (int64_t i = 0; i < num_rows; ++i) {
    const Row& row = rows[i];
    At<int32_t>(upload, d.probes)[row.logit_row] = row.out->request.probe_token;
    At<int32_t>(upload, d.seq)[i] = row.seq;
    At<int32_t>(upload, d.slots)[i] = Slots(row.out->request, row.keys);
  }
  ASSIGN_OR_RETURN(d.inputs, inputs_.Grow(in.bytes(), stream, "reduction inputs"));
  RETURN_IF_ERROR(kernels::CudaStatus(
      cudaMemcpyAsync(d.inputs, upload, in.bytes(), cudaMemcpyHostToDevice, stream),
      "reduction inputs upload"));

  Carver work;
  const int64_t logit_chunks = step.logit_rows * chunks;
  const int64_t head_chunks = num_rows * num_heads_ * layout.max_chunks;
  d.moments = work.Take<base::SoftmaxMoments>(logit_chunks);
  d.first_bad = work.Take<int32_t>(logit_chunks);
  d.probe_above = work.Take<int32_t>(logit_chunks);
  d.cand_values = work.Take<float>(logit_chunks * layout.top_k);
  d.cand_ids = work.Take<int32_t>(logit_chunks * layout.top_k);
  d.partials = work.Take<AttentionHeadPartial>(head_chunks);
  d.chunk_bad = work.Take<int32_t>(head_chunks);
  d.log_norm = work.Take<double>(num_rows * num_heads_);
  ASSIGN_OR_RETURN(d.workspace, workspace_.Grow(work.bytes(), stream, "reduction workspace"));
  ASSIGN_OR_RETURN(d.outputs, outputs_.Grow(layout.bytes, stream, "reduction outputs"));
  return d;
}

absl::Status CudaRowReducer::LaunchLogits(const StepData& step, const Layout& layout,
                                          const Device& d) {
  kernels::LogitStatsParams p;
  p.logits = step.logits;
  p.rows = step.logit_rows;
  p.vocab = vocab_;
  p.stride = vocab_;
  p.top_k = layout.top_k;
  p.moments = At<base::SoftmaxMoments>(d.workspace, d.moments);
  p.first_non_finite = At<int32_t>(d.workspace, d.first_bad);
  p.top_values = At<float>(d.outputs, layout.top_values);
  p.top_ids = At<int32_t>(d.outputs, layout.top_ids);
  p.candidate_values = At<float>(d.workspace, d.cand_values);
  p.candidate_ids = At<int32_t>(d.workspace, d.cand_ids);
  p.probe_tokens = At<int32_t>(d.inputs, d.probes);
  p.records = At<LogitRecord>(d.outputs, layout.records);
  p.probe_above = At<int32_t>(d.workspace, d.probe_above);
  return kernels::CudaStatus(kernels::LaunchLogitStats(p, context_->stream()), "logit reduction");
}

absl::Status CudaRowReducer::LaunchAttention(int64_t num_rows, const StepData& step,
                                             const Layout& layout, const Device& d) {
  kernels::AttentionStatsParams p;
  p.scores = step.score_table;
  p.keys = step.kv_len;
  p.seq = At<int32_t>(d.inputs, d.seq);
  p.slots = At<int32_t>(d.inputs, d.slots);
  p.rows = num_rows;
  p.num_heads = num_heads_;
  p.max_chunks = layout.max_chunks;
  p.partials = At<AttentionHeadPartial>(d.workspace, d.partials);
  p.chunk_non_finite = At<int32_t>(d.workspace, d.chunk_bad);
  p.log_normalizers = At<double>(d.workspace, d.log_norm);
  p.heads = At<AttentionHeadPartial>(d.outputs, layout.heads);
  p.non_finite = At<int32_t>(d.outputs, layout.non_finite);
  p.agreement_sums = At<double>(d.outputs, layout.agreement);
  return kernels::CudaStatus(kernels::LaunchAttentionStats(p, context_->stream()),
                             "attention reduction");
}

absl::Status CudaRowReducer::Enqueue(std::span<const Row> rows, const StepData& step) {
  cudaStream_t stream = context_->stream();
  const Layout layout = PlanLayout(rows, step);
  ASSIGN_OR_RETURN(const Device d, Prepare(rows, step, layout));
  RETURN_IF_ERROR(LaunchLogits(step, layout, d));
  RETURN_IF_ERROR(LaunchAttention(static_cast<int64_t>(rows.size()), step, layout, d));
  ASSIGN_OR_RETURN(void* download,
                   download_.Grow(layout.bytes, stream, "reduction records (pinned)"));
  RETURN_IF_ERROR(kernels::CudaStatus(
      cudaMemcpyAsync(download, d.outputs, layout.bytes, cudaMemcpyDeviceToHost, stream),
      "reduction records download"));
  layout_ = layout;
  return absl::OkStatus();
}

namespace {

// The attention half of a row's reduction from its merged heads and agreement chunk sums.
absl::StatusOr<entropix::AttentionMetrics> FinishAttention(const AttentionHeadPartial* heads,
                                                           int64_t num_heads, bool non_finite,
                                                           const double* agreement, int64_t chunks,
                                                           const ReductionRequest& request) {
  if (non_finite) {
    return absl::InvalidArgumentError(
        "attention scores of the last layer are not finite (NaN or inf)");
  }
  std::vector<entropix::AttentionHeadState> states(num_heads);
  std::memcpy(static_cast<void*>(states.data()), heads, num_heads * sizeof(AttentionHeadPartial));
  double agreement_sum = 0.0;
  for (int64_t c = 0; c < chunks; ++c) agreement_sum += agreement[c];
  return entropix::CombineAttentionMetrics(states, agreement_sum, request.attention_mode,
                                           request.reference_len);
}

}  // namespace

void CudaRowReducer::Finish(std::span<const Row> rows) const {
  const void* base = download_.get();
  const Layout& l = layout_;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    RowReduction& out = *row.out;
    const LogitRecord& record = At<LogitRecord>(base, l.records)[row.logit_row];
    if (record.first_non_finite >= 0) {
      out.status = absl::InvalidArgumentError(absl::StrCat(
          "logits[", record.first_non_finite, "] is NaN or +inf; logits must be finite or -inf"));
      continue;
    }
    absl::StatusOr<entropix::LogitMetrics> metrics = entropix::FinishLogitMetrics(record.moments);
    absl::StatusOr<entropix::AttentionMetrics> attention = FinishAttention(
        At<AttentionHeadPartial>(base, l.heads) + i * num_heads_, num_heads_,
        At<int32_t>(base, l.non_finite)[i] != 0, At<double>(base, l.agreement) + i * l.max_chunks,
        l.max_chunks, out.request);
    if (!metrics.ok() || !attention.ok()) {
      out.status = metrics.ok() ? attention.status() : metrics.status();
      continue;
    }
    out.status = absl::OkStatus();
    out.logits = *metrics;
    out.attention = *attention;
    const int64_t k = std::min<int64_t>(out.request.candidates, vocab_);
    const float* values = At<float>(base, l.top_values) + row.logit_row * l.top_k;
    const int32_t* ids = At<int32_t>(base, l.top_ids) + row.logit_row * l.top_k;
    out.candidates.logits.assign(values, values + k);
    out.candidates.ids.assign(ids, ids + k);
    out.probe_logit = record.probe_logit;
    out.probe_rank = record.probe_rank;
  }
}

}  // namespace arbor::worker
