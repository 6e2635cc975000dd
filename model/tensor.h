// A read-only view of one checkpoint tensor (typically inside a memory-mapped safetensors or GGUF
// file), the unit the loader hands to a backend without copying. Quantized tensors stay in their
// blocks: each row is RowBytes(dtype, cols) bytes of whole blocks.
#ifndef ARBOR_MODEL_TENSOR_H_
#define ARBOR_MODEL_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/dtype.h"

namespace arbor::model {

struct TensorView {
  std::string name;  // e.g. "model.layers.0.self_attn.q_proj.weight"
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // Row-major (PyTorch order): [out_features, in_features].
  const void* data = nullptr;  // Valid while the owning checkpoint is alive.
  size_t nbytes = 0;           // Rows (all but the last dimension) × RowBytes(dtype, last).
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TENSOR_H_
