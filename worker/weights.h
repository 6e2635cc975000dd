// Checkpoint tensors as the backends load them: one shape check and one widening to fp32 for
// every element type (float or GGUF block-quantized), shared by the CPU and CUDA backends so
// that both accept exactly the same checkpoints.
#ifndef ARBOR_WORKER_WEIGHTS_H_
#define ARBOR_WORKER_WEIGHTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
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

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_WEIGHTS_H_
