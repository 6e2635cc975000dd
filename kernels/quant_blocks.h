// GGUF's block-quantized weight layouts (ggml's block_q8_0, block_q4_0, block_q4_1) as packed
// structs, so every kernel reads a block the same way, and the CPU reference dequantizer: the
// twin that quantized kernels are checked against and the load-time conversion of backends that
// compute in float. Scales are IEEE half; a Q4 byte holds weight j in its low nibble and weight
// j + 16 in its high nibble.
#ifndef ARBOR_KERNELS_QUANT_BLOCKS_H_
#define ARBOR_KERNELS_QUANT_BLOCKS_H_

#include <cstdint>

#include "kernels/weight_type.h"
#include "model/dtype.h"

namespace arbor::kernels {

inline constexpr int kQuantBlock = 32;  // Weights per Q8_0 / Q4_0 / Q4_1 block.

struct BlockQ8_0 {
  uint16_t d;              // Scale (f16).
  int8_t qs[kQuantBlock];  // w = d·q.
};
struct BlockQ4_0 {
  uint16_t d;                   // Scale (f16).
  uint8_t qs[kQuantBlock / 2];  // w = d·(q − 8).
};
struct BlockQ4_1 {
  uint16_t d;                   // Scale (f16).
  uint16_t m;                   // Minimum (f16).
  uint8_t qs[kQuantBlock / 2];  // w = d·q + m.
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20,
              "ggml block layouts are packed");

// Writes the `n` weights that `src` (whole blocks of `dtype`, or plain elements of a float type)
// encodes to `dst` in fp32. `n` must be a multiple of the dtype's block. Exact for every type:
// d·q (+ m) is computed in fp32 as ggml does.
void DequantizeRow(model::DType dtype, const void* src, int64_t n, float* dst);

// Quantizes `n` fp32 weights (a multiple of 32) to Q8_0 blocks as llama.cpp does: per block
// d = max |x| / 127 (stored as f16), q = round(x / d) with that fp32 d (q = 0 when d is 0).
void QuantizeRowQ8_0(const float* src, int64_t n, BlockQ8_0* dst);

// The file type of a quantized kernel weight type (kQ8_0 → DType::kQ8_0, ...).
inline model::DType BlockDType(WeightType type) {
  switch (type) {
    case WeightType::kQ8_0:
      return model::DType::kQ8_0;
    case WeightType::kQ4_0:
      return model::DType::kQ4_0;
    case WeightType::kQ4_1:
      return model::DType::kQ4_1;
    case WeightType::kBF16:
      return model::DType::kBF16;
    case WeightType::kF32:
      break;
  }
  return model::DType::kF32;
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_BLOCKS_H_
