// The final projection of the chosen hidden rows (each batch row's last token) onto the
// vocabulary: logits[r] = lm_head · hidden[rows[r]]. Only rows whose next token is wanted are
// projected: with a 128k vocabulary this is the largest matmul of a decode step. The logit
// statistics (entropy, varentropy, top-K) are computed from its output by entropix/.
//
// Framework-free: shared by the CPU implementation (logits_ref.cc) and the CUDA backend.
#ifndef ARBOR_KERNELS_LOGITS_H_
#define ARBOR_KERNELS_LOGITS_H_

#include <cstdint>

#include "kernels/matmul.h"
#include "kernels/weight_type.h"

namespace arbor::kernels {

class ThreadPool;

struct LogitsParams {
  const float* hidden = nullptr;  // [num_hidden_rows, dim], row i at hidden + i·hidden_stride.
  const int32_t* rows = nullptr;  // [num_rows] indices into hidden.
  const void* lm_head = nullptr;  // [vocab, dim] row-major, element type `lm_head_type`.
  WeightType lm_head_type = WeightType::kF32;
  float* out = nullptr;  // [num_rows, vocab], row r at out + r·out_stride.
  int64_t num_rows = 0;
  int64_t dim = 0;
  int64_t vocab = 0;
  int64_t hidden_stride = 0;
  int64_t out_stride = 0;
  ActivationQuant activation_quant = ActivationQuant::kF32;  // For a quantized lm_head (matmul.h).
  bool batch_invariant = true;                               // As MatmulParams::batch_invariant.
};

// CPU implementation: gathers the rows, then one (threaded) matmul so the lm_head streams once.
void LogitsRef(const LogitsParams& params, ThreadPool* pool);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_LOGITS_H_
