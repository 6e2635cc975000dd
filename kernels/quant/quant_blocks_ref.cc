#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/bf16.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_chunks.h"

namespace arbor::kernels {
namespace {

template <typename Block>
void DequantizeBlocks(const void* src, int64_t n, float* dst) {
  using Traits = ChunkTraits<Block>;
  const Block* blocks = static_cast<const Block*>(src);
  constexpr int64_t kPerBlock = int64_t{Traits::kChunks} * kQuantBlock;
  Chunk chunk;
  for (int64_t b = 0; b < n / kPerBlock; ++b) {
    for (int c = 0; c < Traits::kChunks; ++c) {
      LoadChunk(blocks[b], c, chunk);
      float* out = dst + b * kPerBlock + c * kQuantBlock;
      for (int j = 0; j < kQuantBlock; ++j) {
        const int h = j / (kQuantBlock / 2);
        out[j] = chunk.s[h] * chunk.q[j] + chunk.o[h];
      }
    }
  }
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
      return DequantizeBlocks<BlockQ8_0>(src, n, dst);
    case model::DType::kQ4_0:
      return DequantizeBlocks<BlockQ4_0>(src, n, dst);
    case model::DType::kQ4_1:
      return DequantizeBlocks<BlockQ4_1>(src, n, dst);
    case model::DType::kQ5_0:
      return DequantizeBlocks<BlockQ5_0>(src, n, dst);
    case model::DType::kQ5_1:
      return DequantizeBlocks<BlockQ5_1>(src, n, dst);
    case model::DType::kQ4_K:
      return DequantizeBlocks<BlockQ4_K>(src, n, dst);
    case model::DType::kQ5_K:
      return DequantizeBlocks<BlockQ5_K>(src, n, dst);
    case model::DType::kQ6_K:
      return DequantizeBlocks<BlockQ6_K>(src, n, dst);
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
