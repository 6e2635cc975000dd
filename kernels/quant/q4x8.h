// Q4_0 and Q4_1 matrices repacked for one AVX-512 VNNI pass over eight weight rows at a time
// (WeightType::kQ4x8): per group of eight rows and per 32-weight block, the eight rows' scales,
// offsets and nibbles side by side, so a block of all eight is two 64-byte loads and one
// vpdpbusd covers eight rows instead of one. A GGUF block is 20 bytes (Q4_1) of which the kernel
// of quant_dot_kernel.h decodes one chunk per row with scalar scale conversions and per-row
// float work; here the float work of a block (conversion, scaling, the offset) is one vector op
// for eight rows. Made at load by the CPU backend (`--activation_quant=q8` on CPUs with AVX-512
// VNNI); the numbers are the same as the per-32 kernels' up to fp32 rounding order (the float64
// twin bounds both), and each row's result is the same whatever rows share the call.
#ifndef ARBOR_KERNELS_QUANT_Q4X8_H_
#define ARBOR_KERNELS_QUANT_Q4X8_H_

#include <cstdint>
#include <vector>

#include "kernels/weight_type.h"

namespace arbor::kernels {

// Eight rows' block b. Lane l (of 16) of each 64-byte half of `qs` holds four nibble bytes of row
// l % 8: qs[0, 64) its bytes 4·(l / 8) … +3, qs[64, 128) its bytes 8 + 4·(l / 8) … +3, so that
// the low nibbles of the first half are weights 0–3 / 4–7 of each row, of the second 8–11 /
// 12–15, and the high nibbles weights 16–23 and 24–31 alike. A row's weights are d·q + m (Q4_0:
// m = −8·d, its zero point, exact in half precision).
struct Q4x8Block {
  uint16_t d[8];  // Half-precision scales of the eight rows.
  uint16_t m[8];  // Half-precision offsets.
  uint8_t qs[128];
};
static_assert(sizeof(Q4x8Block) == 160, "two 64-byte halves after 32 bytes of scales");

// Whether `n` rows of `k` weights of `type` can be repacked (Q4_0 or Q4_1, n a multiple of 8).
bool Q4x8Repackable(WeightType type, int64_t n, int64_t k);
// The n / 8 groups of k / 32 blocks each, group-major, of the Q4_0 or Q4_1 matrix `rows`.
std::vector<Q4x8Block> RepackQ4x8(WeightType type, const void* rows, int64_t n, int64_t k);
// Whether this CPU runs the kQ4x8 kernel (AVX-512 VNNI).
bool CpuRunsQ4x8();

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_Q4X8_H_
