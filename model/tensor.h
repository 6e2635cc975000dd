// A read-only view of one checkpoint tensor (typically inside a memory-mapped safetensors file),
// the unit the loader hands to a backend without copying.
#ifndef ARBOR_MODEL_TENSOR_H_
#define ARBOR_MODEL_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace arbor::model {

enum class DType { kF32, kF16, kBF16 };

inline size_t DTypeSize(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

struct TensorView {
  std::string name;  // e.g. "model.layers.0.self_attn.q_proj.weight"
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // Row-major (PyTorch order): [out_features, in_features].
  const void* data = nullptr;  // Valid while the owning checkpoint is alive.
  size_t nbytes = 0;           // Product of shape × DTypeSize(dtype).
};

}  // namespace arbor::model

#endif  // ARBOR_MODEL_TENSOR_H_
