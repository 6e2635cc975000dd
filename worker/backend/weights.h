// Checkpoint tensors as the backends load them: one shape check and one widening to fp32 for
// every element type (float or GGUF block-quantized), shared by the CPU and CUDA backends so
// that both accept exactly the same checkpoints.
#ifndef ARBOR_WORKER_BACKEND_WEIGHTS_H_
#define ARBOR_WORKER_BACKEND_WEIGHTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/matmul.h"
#include "model/tensor.h"

namespace arbor::worker {

// OK when `t` has exactly `shape` and the bytes its dtype needs for it; else INVALID_ARGUMENT
// naming the tensor.
absl::Status CheckTensor(const model::TensorView& t, const std::string& name,
                         const std::vector<int64_t>& shape);

// Rows [row_begin, row_begin + rows) of the 2-D tensor `t` (or the elements of a 1-D one, with
// row_begin 0 and rows 1) widened to fp32 into `out` (exact for every dtype).
void WidenRows(const model::TensorView& t, int64_t row_begin, int64_t rows, float* out);

// The whole tensor widened to fp32.
std::vector<float> WidenToFloat(const model::TensorView& t);

// What a backend computes its weight matrices in (--weights_dtype).
enum class WeightsDtype {
  kNative,  // The checkpoint's own types: f32, bf16, GGUF blocks; f16 widens to f32.
  kF32,     // Everything widened to fp32 (exact).
  kBF16,    // Everything rounded to bf16 (bf16 checkpoints as they are).
  kQ8_0,    // f32/f16/bf16 matrices quantized to Q8_0 at load; quantized ones as they are.
};
// "native", "f32", "bf16", "q8_0"; INVALID_ARGUMENT naming --weights_dtype otherwise.
absl::StatusOr<WeightsDtype> ParseWeightsDtype(absl::string_view name);

// "q8" or "f32" (--activation_quant: how quantized matrices meet the activations,
// kernels/quant/quant_matmul.h); INVALID_ARGUMENT naming the flag otherwise.
absl::StatusOr<kernels::ActivationQuant> ParseActivationQuant(absl::string_view name);
// "invariant" (true) or "fast" (false) (--numerics: whether a row's results are independent of
// what shares its step: CpuBackendOptions and CudaBackendOptions::batch_invariant).
absl::StatusOr<bool> ParseNumerics(absl::string_view name);

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_BACKEND_WEIGHTS_H_
