// Element types of model weights as the CPU and CUDA ops read them. bf16 weights stay bf16 in
// memory (half the bytes to stream per decode step) and widen to fp32 inside the op; GGUF's
// block-quantized types (kernels/quant/quant_blocks.h) stay in their blocks and are widened block
// by block in registers (quant_matmul.h on the CPU; on CUDA invariant_gemm_cuda.h, to bf16).
#ifndef ARBOR_KERNELS_WEIGHT_TYPE_H_
#define ARBOR_KERNELS_WEIGHT_TYPE_H_

#include <cstdint>

namespace arbor::kernels {

enum class WeightType : int32_t {
  kF32 = 0,   // float
  kBF16 = 1,  // uint16_t bit patterns of bfloat16
  kQ8_0 = 2,  // Rows of BlockQ8_0.
  kQ4_0 = 3,  // Rows of BlockQ4_0.
  kQ4_1 = 4,  // Rows of BlockQ4_1.
  kQ4_K = 5,  // Rows of BlockQ4_K.
  kQ5_K = 6,  // Rows of BlockQ5_K.
  kQ6_K = 7,  // Rows of BlockQ6_K.
  kQ5_0 = 8,  // Rows of BlockQ5_0.
  kQ5_1 = 9,  // Rows of BlockQ5_1.
  // Q4_0 or Q4_1 (kQ4x16), Q5_0 or Q5_1 (kQ5x16) and Q8_0 (kQ8x16) rows repacked sixteen at a
  // time, Q4_K (kQ4Kx8), Q5_K (kQ5Kx8) and Q6_K (kQ6Kx8) eight at a time
  // (kernels/quant/repacked_rows.h), for the 8-bit-activation kernels only.
  kQ4x16 = 10,
  kQ8x16 = 11,
  kQ4Kx8 = 12,
  kQ6Kx8 = 13,
  kQ5Kx8 = 14,
  kQ5x16 = 15,
};

inline bool IsQuantized(WeightType type) { return type >= WeightType::kQ8_0; }

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_WEIGHT_TYPE_H_
