// GGUF's block-quantized weight layouts (ggml's block_q8_0, block_q4_0, block_q4_1, block_q5_0,
// block_q5_1 and the
// K-quants block_q4_K, block_q5_K, block_q6_K) as packed structs, so every kernel reads a block
// the same way, and the CPU reference dequantizer: the twin that quantized kernels are checked
// against and the load-time conversion of backends that compute in float. Scales are IEEE half;
// a Q4 byte holds weight j in its low nibble and weight j + 16 in its high nibble.
#ifndef ARBOR_KERNELS_QUANT_QUANT_BLOCKS_H_
#define ARBOR_KERNELS_QUANT_QUANT_BLOCKS_H_

#include <cstdint>
#include <optional>
#include <utility>

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

// Every kernel weight type and the file type it reads as it is (F16 has no kernel type: it is
// widened at load).
inline constexpr std::pair<WeightType, model::DType> kWeightTypes[] = {
    {WeightType::kF32, model::DType::kF32},   {WeightType::kBF16, model::DType::kBF16},
    {WeightType::kQ8_0, model::DType::kQ8_0}, {WeightType::kQ4_0, model::DType::kQ4_0},
    {WeightType::kQ4_1, model::DType::kQ4_1}, {WeightType::kQ5_0, model::DType::kQ5_0},
    {WeightType::kQ5_1, model::DType::kQ5_1}, {WeightType::kQ4_K, model::DType::kQ4_K},
    {WeightType::kQ5_K, model::DType::kQ5_K}, {WeightType::kQ6_K, model::DType::kQ6_K},
};

// The file type of kernel weight type `type` (kQ4_K → DType::kQ4_K, ...).
inline model::DType FileDType(WeightType type) {
  for (const auto& [kernel, file] : kWeightTypes) {
    if (kernel == type) return file;
  }
  return model::DType::kF32;
}

// The kernel type that reads file type `dtype` as it is; none for F16.
inline std::optional<WeightType> KernelWeightType(model::DType dtype) {
  for (const auto& [kernel, file] : kWeightTypes) {
    if (file == dtype) return kernel;
  }
  return std::nullopt;
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_QUANT_BLOCKS_H_
