// Element types of model weights as the CPU and CUDA ops read them. bf16 weights stay bf16 in
// memory (half the bytes to stream per decode step) and widen to fp32 inside the op.
#ifndef ARBOR_KERNELS_WEIGHT_TYPE_H_
#define ARBOR_KERNELS_WEIGHT_TYPE_H_

#include <cstdint>

namespace arbor::kernels {

enum class WeightType : int32_t {
  kF32 = 0,   // float
  kBF16 = 1,  // uint16_t bit patterns of bfloat16
};

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_WEIGHT_TYPE_H_
