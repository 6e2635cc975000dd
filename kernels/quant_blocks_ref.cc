#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/bf16.h"
#include "kernels/quant_blocks.h"

namespace arbor::kernels {
namespace {

template <typename Block, typename Fn>
void ForBlocks(const void* src, int64_t n, float* dst, const Fn& fn) {
  const Block* blocks = static_cast<const Block*>(src);
  for (int64_t b = 0; b < n / kQuantBlock; ++b) fn(blocks[b], dst + b * kQuantBlock);
}

}  // namespace

void DequantizeRow(model::DType dtype, const void* src, int64_t n, float* dst) {
  switch (dtype) {
    case model::DType::kF32:
      std::memcpy(dst, src, n * sizeof(float));
      return;
    case model::DType::kF16:
    case model::DType::kBF16: {
      const uint16_t* in = static_cast<const uint16_t*>(src);
      const bool half = dtype == model::DType::kF16;
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = half ? base::HalfToFloat(in[i]) : base::Bf16ToFloat(in[i]);
      }
      return;
    }
    case model::DType::kQ8_0:
      ForBlocks<BlockQ8_0>(src, n, dst, [](const BlockQ8_0& block, float* out) {
        const float d = base::HalfToFloat(block.d);
        for (int j = 0; j < kQuantBlock; ++j) out[j] = d * static_cast<float>(block.qs[j]);
      });
      return;
    case model::DType::kQ4_0:
      ForBlocks<BlockQ4_0>(src, n, dst, [](const BlockQ4_0& block, float* out) {
        const float d = base::HalfToFloat(block.d);
        for (int j = 0; j < kQuantBlock / 2; ++j) {
          out[j] = d * static_cast<float>((block.qs[j] & 0x0f) - 8);
          out[j + kQuantBlock / 2] = d * static_cast<float>((block.qs[j] >> 4) - 8);
        }
      });
      return;
    case model::DType::kQ4_1:
      ForBlocks<BlockQ4_1>(src, n, dst, [](const BlockQ4_1& block, float* out) {
        const float d = base::HalfToFloat(block.d), m = base::HalfToFloat(block.m);
        for (int j = 0; j < kQuantBlock / 2; ++j) {
          out[j] = d * static_cast<float>(block.qs[j] & 0x0f) + m;
          out[j + kQuantBlock / 2] = d * static_cast<float>(block.qs[j] >> 4) + m;
        }
      });
      return;
  }
}

void QuantizeRowQ8_0(const float* src, int64_t n, BlockQ8_0* dst) {
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    const float* x = src + b * kQuantBlock;
    float amax = 0.0f;
    for (int j = 0; j < kQuantBlock; ++j) amax = std::max(amax, std::abs(x[j]));
    const float d = amax / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    dst[b].d = base::FloatToHalf(d);
    for (int j = 0; j < kQuantBlock; ++j) {
      dst[b].qs[j] = static_cast<int8_t>(std::round(x[j] * inverse));
    }
  }
}

}  // namespace arbor::kernels
