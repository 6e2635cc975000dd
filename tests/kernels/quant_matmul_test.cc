// The quantized matmul (kernels/quant_matmul.h) against its float64 twin: dequantize, then
// multiply in float64. For Q8_0/Q4_0/Q4_1 the weights are decoded here straight from the block
// fields (w = d·q + m, written from the GGUF layout, not with the kernel's code); for the
// K-quants by the scalar dequantizer, itself checked against llama.cpp's gguf package. Every
// type, odd row counts (1, 3, 5, 37), odd output counts (1, 3, 7, 33), 1 to 3 blocks per row,
// strided x and out, with and without a thread pool, fresh random blocks each run (seed printed).
// Bound: the kernel sums in fp32, so |Δ| ≤ 1e-5 · Σ_k |x_k·w_k| + 1e-6 (seen: under 1e-6 relative).
#include "kernels/quant_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <vector>

#include "base/bf16.h"
#include "kernels/embedding.h"
#include "kernels/quant_blocks.h"
#include "kernels/thread_pool.h"

namespace arbor::kernels {
namespace {

// A random half in ±[2^-10, 2^-2]: realistic block scales and minimums.
uint16_t RandomScale(std::mt19937& rng) {
  const uint16_t sign = (rng() & 1) << 15;
  const uint16_t exponent = std::uniform_int_distribution<uint16_t>(5, 13)(rng);
  return static_cast<uint16_t>(sign | exponent << 10 | (rng() & 0x3ff));
}

// Row r of `n` rows of `blocks` random blocks of `type`, and the same weights in float64.
struct QuantRows {
  std::vector<char> bytes;
  std::vector<double> w;  // [n, k].
};

QuantRows RandomRows(WeightType type, int64_t n, int64_t blocks, std::mt19937& rng) {
  const model::DType dtype = FileDType(type);
  const model::DTypeLayout layout = model::Layout(dtype);
  const int block_bytes = layout.block_bytes;
  QuantRows rows;
  rows.bytes.resize(n * blocks * block_bytes);
  for (char& c : rows.bytes) c = static_cast<char>(rng());
  rows.w.resize(n * blocks * layout.block_elements);
  if (layout.block_elements > kQuantBlock || type == WeightType::kQ5_0 ||
      type == WeightType::kQ5_1) {
    // K-quants and Q5: random scale fields, then the dequantizer (checked against llama.cpp's gguf
    // package in quant_blocks_reference_test.cc) gives the weights.
    for (int64_t b = 0; b < n * blocks; ++b) {
      for (int offset : model::HalfFieldOffsets(dtype)) {
        const uint16_t half = RandomScale(rng);
        std::memcpy(rows.bytes.data() + b * block_bytes + offset, &half, 2);
      }
    }
    std::vector<float> w(rows.w.size());
    DequantizeRow(dtype, rows.bytes.data(), static_cast<int64_t>(w.size()), w.data());
    std::copy(w.begin(), w.end(), rows.w.begin());
    return rows;
  }
  for (int64_t b = 0; b < n * blocks; ++b) {
    char* block = rows.bytes.data() + b * block_bytes;
    const uint16_t d_bits = RandomScale(rng), m_bits = RandomScale(rng);
    std::memcpy(block, &d_bits, 2);
    if (type == WeightType::kQ4_1) std::memcpy(block + 2, &m_bits, 2);
    const double d = base::HalfToFloat(d_bits);
    double* w = rows.w.data() + b * kQuantBlock;
    if (type == WeightType::kQ8_0) {
      for (int j = 0; j < kQuantBlock; ++j) w[j] = d * static_cast<int8_t>(block[2 + j]);
      continue;
    }
    const uint8_t* qs =
        reinterpret_cast<const uint8_t*>(block + (type == WeightType::kQ4_1 ? 4 : 2));
    const double m = type == WeightType::kQ4_1 ? base::HalfToFloat(m_bits) : -8.0 * d;
    for (int j = 0; j < kQuantBlock / 2; ++j) {
      w[j] = d * (qs[j] & 0x0f) + m;
      w[j + kQuantBlock / 2] = d * (qs[j] >> 4) + m;
    }
  }
  return rows;
}

TEST(QuantMatmul, MatchesFloat64Twin) {
  const uint32_t seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  ThreadPool pool(2);
  double worst = 0;
  for (WeightType type :
       {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ5_0,
        WeightType::kQ5_1, WeightType::kQ4_K, WeightType::kQ5_K, WeightType::kQ6_K}) {
    const int64_t block = model::Layout(FileDType(type)).block_elements;
    for (int64_t m : {1, 3, 5, 37}) {
      for (int64_t n : {1, 3, 7, 33}) {
        for (int64_t blocks : {1, 2, 3}) {
          const int64_t k = blocks * block, x_stride = k + 5, out_stride = n + 2;
          SCOPED_TRACE(::testing::Message() << "type " << static_cast<int>(type) << " m " << m
                                            << " n " << n << " k " << k);
          const QuantRows w = RandomRows(type, n, blocks, rng);
          std::vector<float> x(m * x_stride);
          for (float& v : x) v = normal(rng);
          for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
            std::vector<float> out(m * out_stride, -1.0f);
            QuantMatmul({x.data(), w.bytes.data(), type, out.data(), m, n, k, x_stride, out_stride},
                        threads);
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = 0; j < n; ++j) {
                double want = 0, scale = 0;
                for (int64_t c = 0; c < k; ++c) {
                  const double product = double{x[i * x_stride + c]} * w.w[j * k + c];
                  want += product;
                  scale += std::abs(product);
                }
                const double error = std::abs(out[i * out_stride + j] - want);
                ASSERT_LE(error, 1e-5 * scale + 1e-6) << "out[" << i << ", " << j << "]";
                worst = std::max(worst, error / (scale + 1e-30));
              }
              // The padding between output rows is left alone.
              if (out_stride > n) ASSERT_EQ(out[i * out_stride + n], -1.0f);
            }
          }
        }
      }
    }
  }
  std::cout << "largest |error| / Σ|x·w|: " << worst << "\n";
}

// base::FloatToHalf (the Q8_0 quantizer's scale rounding): every finite half survives the round
// trip, and values halfway between two halves go to the even one.
TEST(Half, RoundTripsEveryHalfAndRoundsMidpointsToEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;  // inf, NaN.
    const float f = base::HalfToFloat(static_cast<uint16_t>(h));
    ASSERT_EQ(base::FloatToHalf(f), h) << h;
    if ((h & 0x7fff) == 0x7bff) continue;  // The largest finite: its upper midpoint overflows.
    const float next = base::HalfToFloat(static_cast<uint16_t>(h + 1));
    const uint16_t even = (h & 1) == 0 ? h : h + 1;
    if ((h & 0x8000) == 0) ASSERT_EQ(base::FloatToHalf(f + (next - f) / 2), even) << h;
  }
  EXPECT_EQ(base::FloatToHalf(65520.0f), 0x7c00);  // Past the largest half: inf.
  EXPECT_EQ(base::FloatToHalf(1e-9f), 0);
}

TEST(QuantMatmul, EmbeddingRowsOfQuantizedTables) {
  std::mt19937 rng(3);
  const QuantRows table = RandomRows(WeightType::kQ4_1, 5, 2, rng);
  const int32_t tokens[] = {4, 0, 4};
  std::vector<float> out(3 * 64);
  EmbeddingParams p{tokens, table.bytes.data(), WeightType::kQ4_1, out.data(), 3, 5, 64, 64};
  EmbeddingRef(p);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 64; ++j) {
      ASSERT_NEAR(out[i * 64 + j], table.w[tokens[i] * 64 + j], 1e-6) << i << " " << j;
    }
  }
}

}  // namespace
}  // namespace arbor::kernels
