#include "tests/kernels/quant_test_support.h"

#include <cstring>
#include <iostream>

#include "base/bf16.h"

namespace arbor::kernels {
namespace {

// A random half in ±[2^-10, 2^-2]: realistic block scales and minimums.
uint16_t RandomScale(std::mt19937& rng) {
  const uint16_t sign = (rng() & 1) << 15;
  const uint16_t exponent = std::uniform_int_distribution<uint16_t>(5, 13)(rng);
  return static_cast<uint16_t>(sign | exponent << 10 | (rng() & 0x3ff));
}

}  // namespace

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

Q8KRowsStorage::Q8KRowsStorage(int64_t m, int64_t blocks)
    : q(m * blocks * kSuperBlock, 7),
      d(m * blocks, -1.0f),
      scaled_sums(m * blocks * 16, -1.0f),
      sums(m * blocks * 16, -1),
      pairs(m * blocks * kSuperBlock, 3) {
  for (int64_t i = 0; i < m; ++i) {
    rows.push_back({q.data() + i * blocks * kSuperBlock, d.data() + i * blocks,
                    sums.data() + i * blocks * 16, scaled_sums.data() + i * blocks * 16,
                    pairs.data() + i * blocks * kSuperBlock, blocks});
  }
}

std::vector<float> RandomActivations(int64_t m, int64_t x_stride, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> x(m * x_stride);
  for (float& v : x) v = normal(rng) * ((rng() % 64) == 0 ? 30.0f : 1.0f);
  if (m > 1) std::fill(x.begin() + x_stride, x.begin() + x_stride + kQuantBlock, 0.0f);
  return x;
}

void PrintWorst(const std::string& what, const Worst& worst) {
  std::cout << what << ": largest |out − twin| / Σ|x̃·w|: " << worst.twin
            << "; largest |out − exact| / Σ|w|·d/2: " << worst.exact << "\n";
}

}  // namespace arbor::kernels
