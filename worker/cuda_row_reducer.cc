#include "worker/cuda_row_reducer.h"

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
#include "kernels/cuda_status.h"
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
  // Logit processors' rows go to the host path, which applies them to the downloaded row.
  return request.candidates <= kernels::kLogitStatsMaxTopK && request.adjustments.empty();
}

absl::Status CudaRowReducer::Enqueue(std::span<const Row> rows, const StepData& step) {
  cudaStream_t stream = context_->stream();
  const int64_t num_rows = static_cast<int64_t>(rows.size());
  Layout layout;
  layout.logit_rows = step.logit_rows;
  int32_t max_keys = 1;
  for (const Row& row : rows) {
    layout.top_k = std::max<int64_t>(layout.top_k, row.out->request.candidates);
    max_keys = std::max(max_keys, row.keys);
  }
  layout.top_k = std::min(layout.top_k, vocab_);
  layout.max_chunks = kernels::AttentionStatsChunks(max_keys);
  const int64_t chunks = kernels::LogitStatsChunks(vocab_);

  // Inputs: a probe per logits row (−1 for rows without one), the sequence and slots per row.
  Carver in;
  const size_t in_probes = in.Take<int32_t>(step.logit_rows), in_seq = in.Take<int32_t>(num_rows),
               in_slots = in.Take<int32_t>(num_rows);
  ASSIGN_OR_RETURN(void* upload, upload_.Grow(in.bytes(), stream, "reduction inputs (pinned)"));
  std::fill_n(At<int32_t>(upload, in_probes), step.logit_rows, -1);
  for (int64_t i = 0; i < num_rows; ++i) {
    const Row& row = rows[i];
    At<int32_t>(upload, in_probes)[row.logit_row] = row.out->request.probe_token;
    At<int32_t>(upload, in_seq)[i] = row.seq;
    At<int32_t>(upload, in_slots)[i] = Slots(row.out->request, row.keys);
  }
  ASSIGN_OR_RETURN(void* inputs, inputs_.Grow(in.bytes(), stream, "reduction inputs"));
  RETURN_IF_ERROR(kernels::CudaStatus(
      cudaMemcpyAsync(inputs, upload, in.bytes(), cudaMemcpyHostToDevice, stream),
      "reduction inputs upload"));

  Carver work;
  const size_t w_moments = work.Take<entropix::SoftmaxMoments>(step.logit_rows * chunks),
               w_first_bad = work.Take<int32_t>(step.logit_rows * chunks),
               w_probe_above = work.Take<int32_t>(step.logit_rows * chunks),
               w_cand_values = work.Take<float>(step.logit_rows * chunks * layout.top_k),
               w_cand_ids = work.Take<int32_t>(step.logit_rows * chunks * layout.top_k),
               w_partials =
                   work.Take<AttentionHeadPartial>(num_rows * num_heads_ * layout.max_chunks),
               w_chunk_bad = work.Take<int32_t>(num_rows * num_heads_ * layout.max_chunks),
               w_log_norm = work.Take<double>(num_rows * num_heads_);
  ASSIGN_OR_RETURN(void* workspace, workspace_.Grow(work.bytes(), stream, "reduction workspace"));

  // The outputs lie back to back, so one copy brings them all.
  Carver out;
  layout.records = out.Take<LogitRecord>(step.logit_rows);
  layout.top_values = out.Take<float>(step.logit_rows * layout.top_k);
  layout.top_ids = out.Take<int32_t>(step.logit_rows * layout.top_k);
  layout.heads = out.Take<AttentionHeadPartial>(num_rows * num_heads_);
  layout.non_finite = out.Take<int32_t>(num_rows);
  layout.agreement = out.Take<double>(num_rows * layout.max_chunks);
  layout.bytes = out.bytes();
  ASSIGN_OR_RETURN(void* outputs, outputs_.Grow(layout.bytes, stream, "reduction outputs"));

  kernels::LogitStatsParams logit_params;
  logit_params.logits = step.logits;
  logit_params.rows = step.logit_rows;
  logit_params.vocab = vocab_;
  logit_params.stride = vocab_;
  logit_params.top_k = layout.top_k;
  logit_params.moments = At<entropix::SoftmaxMoments>(workspace, w_moments);
  logit_params.first_non_finite = At<int32_t>(workspace, w_first_bad);
  logit_params.top_values = At<float>(outputs, layout.top_values);
  logit_params.top_ids = At<int32_t>(outputs, layout.top_ids);
  logit_params.candidate_values = At<float>(workspace, w_cand_values);
  logit_params.candidate_ids = At<int32_t>(workspace, w_cand_ids);
  logit_params.probe_tokens = At<int32_t>(inputs, in_probes);
  logit_params.records = At<LogitRecord>(outputs, layout.records);
  logit_params.probe_above = At<int32_t>(workspace, w_probe_above);
  RETURN_IF_ERROR(
      kernels::CudaStatus(kernels::LaunchLogitStats(logit_params, stream), "logit reduction"));

  kernels::AttentionStatsParams attention;
  attention.scores = step.score_table;
  attention.keys = step.kv_len;
  attention.seq = At<int32_t>(inputs, in_seq);
  attention.slots = At<int32_t>(inputs, in_slots);
  attention.rows = num_rows;
  attention.num_heads = num_heads_;
  attention.max_chunks = layout.max_chunks;
  attention.partials = At<AttentionHeadPartial>(workspace, w_partials);
  attention.chunk_non_finite = At<int32_t>(workspace, w_chunk_bad);
  attention.log_normalizers = At<double>(workspace, w_log_norm);
  attention.heads = At<AttentionHeadPartial>(outputs, layout.heads);
  attention.non_finite = At<int32_t>(outputs, layout.non_finite);
  attention.agreement_sums = At<double>(outputs, layout.agreement);
  RETURN_IF_ERROR(
      kernels::CudaStatus(kernels::LaunchAttentionStats(attention, stream), "attention reduction"));

  ASSIGN_OR_RETURN(void* download,
                   download_.Grow(layout.bytes, stream, "reduction records (pinned)"));
  RETURN_IF_ERROR(kernels::CudaStatus(
      cudaMemcpyAsync(download, outputs, layout.bytes, cudaMemcpyDeviceToHost, stream),
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
