// Element types of checkpoint tensors: the float types of safetensors and GGUF, and GGUF's
// block-quantized types, where a row is a run of fixed-size blocks (a scale, sometimes a
// minimum, and packed integers). Only the layout lives here (what a file reader needs to check
// sizes); the block structs and their dequantizers are in kernels/quant_blocks.h.
#ifndef ARBOR_MODEL_DTYPE_H_
#define ARBOR_MODEL_DTYPE_H_

#include <cstdint>

namespace arbor::model {

enum class DType {
  kF32,
  kF16,
  kBF16,
  kQ8_0,  // 32 weights: f16 scale d, 32 × int8 q; w = d·q.
  kQ4_0,  // 32 weights: f16 scale d, 16 bytes of nibbles; w = d·(q − 8).
  kQ4_1,  // 32 weights: f16 scale d, f16 minimum m, 16 bytes of nibbles; w = d·q + m.
};

// Weights per block and bytes per block (1 and the element size for the float types).
struct DTypeLayout {
  int block_elements;
  int block_bytes;
};

DTypeLayout Layout(DType dtype);
// "F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1" (safetensors' and ggml's spelling).
const char* DTypeName(DType dtype);
inline bool IsQuantized(DType dtype) { return Layout(dtype).block_elements > 1; }

// Bytes of a row of `cols` weights; -1 when `cols` is negative or not a whole number of blocks.
int64_t RowBytes(DType dtype, int64_t cols);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_DTYPE_H_
