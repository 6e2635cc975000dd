// Element types of checkpoint tensors: the float types of safetensors and GGUF, and GGUF's
// block-quantized types, where a row is a run of fixed-size blocks (a scale, sometimes a
// minimum, and packed integers). Only the layout lives here (what a file reader needs to check
// sizes); the block structs and their dequantizers are in kernels/quant/quant_blocks.h.
#ifndef ARBOR_MODEL_DTYPE_H_
#define ARBOR_MODEL_DTYPE_H_

#include <cstdint>
#include <vector>

namespace arbor::model {

enum class DType {
  kF32,
  kF16,
  kBF16,
  kQ8_0,  // 32 weights: f16 scale d, 32 × int8 q; w = d·q.
  kQ4_0,  // 32 weights: f16 scale d, 16 bytes of nibbles; w = d·(q − 8).
  kQ4_1,  // 32 weights: f16 scale d, f16 minimum m, 16 bytes of nibbles; w = d·q + m.
  kQ5_0,  // 32 weights: f16 d, 4 bytes of fifth bits, 16 bytes of nibbles; w = d·(q − 16).
  kQ5_1,  // 32 weights: f16 d, f16 m, fifth bits, nibbles; w = d·q + m.
  // K-quants: super-blocks of 256 weights with sub-block scales (llama.cpp's Q4_K_M / Q5_K_M
  // mixes use these three).
  kQ4_K,  // f16 d, dmin; 12 bytes of 6-bit scales/mins of 8 sub-blocks; 128 bytes of nibbles.
  kQ5_K,  // As Q4_K plus 32 bytes of fifth bits.
  kQ6_K,  // 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales, f16 d.
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

// Byte offsets, within a block, of its f16 fields (scales, minimums): a block is finite exactly
// when they are. Float types: {0} for each element (F16, BF16 are halves; F32 has none here).
std::vector<int> HalfFieldOffsets(DType dtype);

}  // namespace arbor::model

#endif  // ARBOR_MODEL_DTYPE_H_
