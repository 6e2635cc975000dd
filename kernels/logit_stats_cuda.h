// The fused pass over logits rows for the entropix metrics (entropix/logit_metrics.h): each row
// is read once, in chunks; every chunk yields SoftmaxMoments partials (max, Σe, Σe·y, Σe·y²
// relative to its max), the first non-finite index, and its K best (value, id) candidates; a
// second kernel, a warp per candidate over many CTAs, ranks each by binary search in the other
// chunks' sorted candidates and so places the row's top-K in entropix's canonical order
// (value descending, then id ascending). Asked for records, the chunks also count the logits
// above a probed token's, and a third kernel merges each row's chunks on the device, so the host
// only runs entropix::FinishLogitMetrics on the merged moments; top-K log-probs are value −
// log-sum-exp.
#ifndef ARBOR_KERNELS_LOGIT_STATS_CUDA_H_
#define ARBOR_KERNELS_LOGIT_STATS_CUDA_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "base/softmax_moments.h"

namespace arbor::kernels {

inline constexpr int64_t kLogitStatsChunk = 2048;    // Logits per chunk (one CTA).
inline constexpr int64_t kLogitStatsMaxTopK = 1024;  // Half the sort buffer (merge rounds).

// A row's reduction once its chunks are merged: what the host needs besides the top-K.
struct LogitRecord {
  base::SoftmaxMoments moments;   // The whole row's.
  int32_t first_non_finite = -1;  // Index of the first NaN or +inf, or −1.
  int32_t probe_rank = 0;         // 1 + entries strictly above the probe's logit; 0: no probe.
  float probe_logit = 0.0f;
  float unused = 0.0f;
};

inline int64_t LogitStatsChunks(int64_t vocab) {
  return (vocab + kLogitStatsChunk - 1) / kLogitStatsChunk;
}

struct LogitStatsParams {
  const float* logits = nullptr;  // [rows, vocab], row r at logits + r·stride.
  int64_t rows = 0;
  int64_t vocab = 0;
  int64_t stride = 0;
  int64_t top_k = 0;  // [0, kLogitStatsMaxTopK]
  // Outputs, C = LogitStatsChunks(vocab) per row:
  base::SoftmaxMoments* moments = nullptr;  // [rows, C]
  int32_t* first_non_finite = nullptr;      // [rows, C]: NaN/+inf index in the chunk, or −1.
  float* top_values = nullptr;              // [rows, top_k], canonical order.
  int32_t* top_ids = nullptr;               // [rows, top_k]
  // Workspace: [rows, C, top_k] candidates each (unused when top_k = 0).
  float* candidate_values = nullptr;
  int32_t* candidate_ids = nullptr;
  // Optional [rows]: a token per row whose logit and rank the records carry, or −1.
  const int32_t* probe_tokens = nullptr;
  // Optional [rows]: the merged records (the kernel that fills them runs only when set).
  LogitRecord* records = nullptr;
  // Workspace [rows, C], needed when records and probe_tokens are set: each chunk's count of
  // logits above its row's probe.
  int32_t* probe_above = nullptr;
};

// Device pointers; asynchronous on `stream`. cudaErrorInvalidValue for top_k outside
// [0, kLogitStatsMaxTopK], more than 65535 rows, or probes to rank without probe_above.
cudaError_t LaunchLogitStats(const LogitStatsParams& params, cudaStream_t stream);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_LOGIT_STATS_CUDA_H_
