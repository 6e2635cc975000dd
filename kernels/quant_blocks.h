// GGUF's block-quantized weight layouts (ggml's block_q8_0, block_q4_0, block_q4_1, block_q5_0,
// block_q5_1 and the
// K-quants block_q4_K, block_q5_K, block_q6_K) as packed structs, so every kernel reads a block
// the same way, and the CPU reference dequantizer: the twin that quantized kernels are checked
// against and the load-time conversion of backends that compute in float. Scales are IEEE half;
// a Q4 byte holds weight j in its low nibble and weight j + 16 in its high nibble.
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
struct BlockQ5_0 {
  uint16_t d;                   // Scale (f16).
  uint8_t qh[4];                // Fifth bit of weight j: bit j of this little-endian word.
  uint8_t qs[kQuantBlock / 2];  // w = d·(q − 16).
};
struct BlockQ5_1 {
  uint16_t d;  // Scale (f16).
  uint16_t m;  // Minimum (f16).
  uint8_t qh[4];
  uint8_t qs[kQuantBlock / 2];  // w = d·q + m.
};

inline constexpr int kSuperBlock = 256;  // Weights per K-quant block.
struct BlockQ4_K {
  uint16_t d;                   // Super-block scale of the sub-block scales (f16).
  uint16_t dmin;                // Super-block scale of the sub-block minimums (f16).
  uint8_t scales[12];           // 8 × (6-bit scale, 6-bit minimum), packed.
  uint8_t qs[kSuperBlock / 2];  // Sub-blocks 2p and 2p+1 share qs[32p..]: low, high nibble.
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kSuperBlock / 8];  // Fifth bit of weight l of sub-block c: bit c of qh[l].
  uint8_t qs[kSuperBlock / 2];
};
struct BlockQ6_K {
  uint8_t ql[kSuperBlock / 2];      // Low 4 bits.
  uint8_t qh[kSuperBlock / 4];      // High 2 bits.
  int8_t scales[kSuperBlock / 16];  // One per 16 weights.
  uint16_t d;                       // f16.
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 &&
                  sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 && sizeof(BlockQ4_K) == 144 &&
                  sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210,
              "ggml block layouts are packed");

// Writes the `n` weights that `src` (whole blocks of `dtype`, or plain elements of a float type)
// encodes to `dst` in fp32. `n` must be a multiple of the dtype's block. Computed in fp32 as
// ggml does: (d·sc)·q + m.
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
    case WeightType::kQ5_0:
      return model::DType::kQ5_0;
    case WeightType::kQ5_1:
      return model::DType::kQ5_1;
    case WeightType::kQ4_K:
      return model::DType::kQ4_K;
    case WeightType::kQ5_K:
      return model::DType::kQ5_K;
    case WeightType::kQ6_K:
      return model::DType::kQ6_K;
    case WeightType::kBF16:
      return model::DType::kBF16;
    case WeightType::kF32:
      break;
  }
  return model::DType::kF32;
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_BLOCKS_H_
