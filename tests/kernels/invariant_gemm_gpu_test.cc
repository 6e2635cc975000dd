// The batch-invariant GEMM (kernels/invariant_gemm_cuda.h) against float64 on awkward sizes and
// strides, bf16 weights and every GGUF block type it reads (quant_test_support.h's random blocks,
// their weights rounded to bf16 as the kernel rounds them), and the promise it exists for: a row's
// output is the same bits whatever the row count of its launch (every tile shape: 1–8, 9–16,
// 17–32 and more rows) and wherever the row sits in it. Skips without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "kernels/invariant_gemm_cuda.h"
#include "kernels/quant/quant_blocks.h"
#include "model/dtype.h"
#include "tests/kernels/gpu_test_support.h"
#include "tests/kernels/quant_test_support.h"

namespace arbor::kernels {
namespace {

// Σ_k x[i, k]·w[n, k] in float64 over x rounded to bf16 (as the kernel narrows it) and the
// weights w (already exact).
std::vector<float> ProductF64(const std::vector<float>& x, int64_t x_stride, int64_t m,
                              const std::vector<float>& w, int64_t n, int64_t k) {
  std::vector<float> out(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t c = 0; c < k; ++c) {
        const float xr = base::Bf16ToFloat(base::FloatToBf16(x[i * x_stride + c]));
        sum += double{xr} * w[j * k + c];
      }
      out[i * n + j] = static_cast<float>(sum);
    }
  }
  return out;
}

// Rows [0, m) of an [.., out_stride] output, packed.
std::vector<float> Packed(const std::vector<float>& out, int64_t out_stride, int64_t m, int64_t n) {
  std::vector<float> rows(m * n);
  for (int64_t i = 0; i < m; ++i) {
    std::memcpy(&rows[i * n], &out[i * out_stride], n * sizeof(float));
  }
  return rows;
}

// An [n, k] weight matrix of `type` on the host: its bytes, and its weights as the kernel sees
// them (bf16 values; a block type's dequantized through the CPU's reference, rounded to bf16).
struct Weights {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

Weights RandomWeights(WeightType type, int64_t n, int64_t k, std::mt19937& rng) {
  Weights w;
  if (type == WeightType::kBF16) {
    const std::vector<uint16_t> bf16 = ToBf16(Normal(rng, n * k));
    w.bytes.resize(bf16.size() * 2);
    std::memcpy(w.bytes.data(), bf16.data(), w.bytes.size());
    w.values = Widen(bf16);
    return w;
  }
  const QuantRows rows =
      RandomRows(type, n, k / model::Layout(FileDType(type)).block_elements, rng);
  w.bytes.assign(rows.bytes.begin(), rows.bytes.end());
  for (double v : rows.w) {
    w.values.push_back(base::Bf16ToFloat(base::FloatToBf16(static_cast<float>(v))));
  }
  return w;
}

// The GEMM of kRows rows against float64, then every slice of 1–129 rows at a random offset
// equal bit for bit to the same rows of the whole product.
void CheckGemm(WeightType type, int64_t n, int64_t k, std::mt19937& rng) {
  SCOPED_TRACE(testing::Message() << "type " << static_cast<int>(type) << " n " << n << " k " << k);
  constexpr int64_t kRows = 200;  // Beyond 32: the widest tiles, and a partial last one.
  const int64_t x_stride = k + 4, out_stride = n + 3;  // Rows apart, as the kernel allows.
  const std::vector<float> x = Normal(rng, kRows * x_stride);
  const Weights w = RandomWeights(type, n, k, rng);
  DeviceArray<float> d_x(x);
  DeviceArray<uint8_t> d_w(w.bytes);
  DeviceArray<float> all(kRows * out_stride);
  all.Poison();
  InvariantGemmParams p{d_x.get(), nullptr, d_w.get(), all.get(),  kRows,
                        n,         k,       x_stride,  out_stride, type};
  ASSERT_TRUE(InvariantGemmServes(p));
  ExpectOk(LaunchInvariantGemm(p, nullptr));
  const std::vector<float> reference = Packed(all.Download(), out_stride, kRows, n);
  // bf16 products are exact in fp32; the fp32 sums round ~1e-7·√k relative to the terms (and a
  // dequantized weight may round to the other bf16 neighbour where fp32 contraction differs).
  double rms = 0;
  for (float v : w.values) rms += double{v} * v;
  rms = std::sqrt(rms / static_cast<double>(w.values.size()));
  ExpectClose(reference, ProductF64(x, x_stride, kRows, w.values, n, k), 1e-5,
              1e-6 * rms * std::sqrt(static_cast<double>(k)));
  for (int64_t m : {1, 2, 7, 8, 9, 16, 17, 31, 33, 64, 129}) {
    const int64_t first = std::uniform_int_distribution<int64_t>(0, kRows - m)(rng);
    SCOPED_TRACE(testing::Message() << "rows " << first << " to " << first + m);
    DeviceArray<float> out(m * out_stride);
    out.Poison();
    p.x = d_x.get() + first * x_stride;
    p.out = out.get();
    p.m = m;
    ExpectOk(LaunchInvariantGemm(p, nullptr));
    const std::vector<float> got = Packed(out.Download(), out_stride, m, n);
    EXPECT_EQ(std::memcmp(got.data(), &reference[first * n], m * n * sizeof(float)), 0)
        << "a row's output depends on its launch";
  }
  // Rows gathered by index (the logits' way): every third row, last first.
  std::vector<int32_t> rows;
  for (int32_t r = kRows - 1; r >= 0; r -= 3) rows.push_back(r);
  DeviceArray<int32_t> d_rows(rows);
  DeviceArray<float> gathered(rows.size() * out_stride);
  gathered.Poison();
  p.x = d_x.get();
  p.rows = d_rows.get();
  p.out = gathered.get();
  p.m = static_cast<int64_t>(rows.size());
  ExpectOk(LaunchInvariantGemm(p, nullptr));
  const std::vector<float> got = Packed(gathered.Download(), out_stride, p.m, n);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(std::memcmp(&got[i * n], &reference[rows[i] * n], n * sizeof(float)), 0)
        << "gathered row " << rows[i];
  }
}

TEST(OpsGpu, InvariantGemmMatchesFloat64AndEveryRowIsItsOwn) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  // k: whole 32-wide chunks, and last chunks of 8, 16 and 24 (688: the `small` preset's ffn).
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{1, 32},
                             {5, 8},
                             {17, 96},
                             {33, 40},
                             {100, 576},
                             {130, 688},
                             {7, 1048},
                             {2051, 2048},
                             {64, 8192}}) {
    CheckGemm(WeightType::kBF16, n, k, rng);
  }
}

TEST(OpsGpu, InvariantGemmReadsEveryGgufBlockType) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (WeightType type : {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_1,
                          WeightType::kQ5_0, WeightType::kQ5_1}) {
    for (const auto& [n, k] : {std::pair<int64_t, int64_t>{1, 32}, {17, 96}, {130, 576}}) {
      CheckGemm(type, n, k, rng);
    }
  }
  for (WeightType type : {WeightType::kQ4_K, WeightType::kQ5_K, WeightType::kQ6_K}) {
    for (const auto& [n, k] : {std::pair<int64_t, int64_t>{3, 256}, {130, 768}, {33, 2048}}) {
      CheckGemm(type, n, k, rng);
    }
  }
}

TEST(OpsGpu, InvariantGemmRefusesWhatItCannotTake) {
  const auto* x16 = reinterpret_cast<const float*>(16);
  const auto* w16 = reinterpret_cast<const void*>(16);
  auto* out = reinterpret_cast<float*>(16);
  const InvariantGemmParams ok{x16, nullptr, w16, out, 1, 4, 64, 64, 4};
  InvariantGemmParams blocks = ok;
  blocks.w_type = WeightType::kQ4_K;
  EXPECT_FALSE(InvariantGemmServes(blocks));  // k not a whole super-block.
  blocks.k = blocks.x_stride = 256;
  EXPECT_TRUE(InvariantGemmServes(blocks));
  blocks.w = reinterpret_cast<const void*>(18);  // Blocks need 2-byte alignment only.
  EXPECT_TRUE(InvariantGemmServes(blocks));
  blocks.w_type = WeightType::kQ4Kx8;  // The CPU's repacked layout.
  EXPECT_FALSE(InvariantGemmServes(blocks));
  EXPECT_TRUE(InvariantGemmServes(ok));
  InvariantGemmParams bad = ok;
  bad.k = bad.x_stride = 44;  // Not a multiple of 8.
  EXPECT_FALSE(InvariantGemmServes(bad));
  bad = ok;
  bad.k = bad.x_stride = 40;  // A short last chunk is fine.
  EXPECT_TRUE(InvariantGemmServes(bad));
  bad = ok;
  bad.x_stride = 66;  // Rows not 16-byte aligned.
  EXPECT_FALSE(InvariantGemmServes(bad));
  bad = ok;
  bad.w = reinterpret_cast<const void*>(18);  // bf16 rows are read 16 bytes at a time.
  EXPECT_FALSE(InvariantGemmServes(bad));
  bad = ok;
  bad.m = 0;
  EXPECT_FALSE(InvariantGemmServes(bad));
  EXPECT_EQ(LaunchInvariantGemm(bad, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace arbor::kernels
