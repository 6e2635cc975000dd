#include "kernels/quant/q4x8.h"

#include <cstring>

#include "base/bf16.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_matmul.h"

namespace arbor::kernels {

bool Q4x8Repackable(WeightType type, int64_t n, int64_t k) {
  return (type == WeightType::kQ4_0 || type == WeightType::kQ4_1) && n > 0 && n % 8 == 0 &&
         k > 0 && k % kQuantBlock == 0;
}

std::vector<Q4x8Block> RepackQ4x8(WeightType type, const void* rows, int64_t n, int64_t k) {
  const int64_t blocks = k / kQuantBlock;
  std::vector<Q4x8Block> out((n / 8) * blocks);
  const bool q4_1 = type == WeightType::kQ4_1;
  for (int64_t row = 0; row < n; ++row) {
    const int lane = static_cast<int>(row % 8);
    for (int64_t b = 0; b < blocks; ++b) {
      Q4x8Block& group = out[(row / 8) * blocks + b];
      const uint8_t* qs;
      if (q4_1) {
        const BlockQ4_1& block = static_cast<const BlockQ4_1*>(rows)[row * blocks + b];
        group.d[lane] = block.d;
        group.m[lane] = block.m;
        qs = block.qs;
      } else {
        const BlockQ4_0& block = static_cast<const BlockQ4_0*>(rows)[row * blocks + b];
        group.d[lane] = block.d;
        // −8·d: the exponent moves by 3, so the half stays exact (a finite d below 8192).
        group.m[lane] = base::FloatToHalf(-8.0f * base::HalfToFloat(block.d));
        qs = block.qs;
      }
      for (int part = 0; part < 4; ++part) {
        // Bytes 4·part … +3 of the row: half part / 2, lane `lane` + 8·(part % 2).
        std::memcpy(group.qs + 64 * (part / 2) + 4 * (lane + 8 * (part % 2)), qs + 4 * part, 4);
      }
    }
  }
  return out;
}

bool CpuRunsQ4x8() { return CpuRunsQ8Isa(Q8Isa::kAvx512Vnni); }

}  // namespace arbor::kernels
