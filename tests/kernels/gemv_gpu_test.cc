// The GEMV of few rows (kernels/gemv_cuda.h) against float64 on awkward sizes, with gathered
// rows, strided outputs, and the RMSNorm and residual add folded in; and the bit-identity of a
// row's result alone and among others. Skips without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "base/bf16.h"
#include "kernels/gemv_cuda.h"
#include "tests/kernels/gpu_test_support.h"

namespace arbor::kernels {
namespace {

// Σ_k x[i, k]·w[n, k] in float64 over the exact bf16 weights and fp32 activations.
std::vector<double> MatmulF64(const std::vector<float>& x, int64_t x_stride,
                              const std::vector<int32_t>& rows, const std::vector<uint16_t>& w,
                              int64_t n, int64_t k) {
  std::vector<double> out(rows.size() * n);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t c = 0; c < k; ++c) {
        sum += double{x[rows[i] * x_stride + c]} * base::Bf16ToFloat(w[j * k + c]);
      }
      out[i * n + j] = sum;
    }
  }
  return out;
}

// The GEMV against float64 on awkward sizes, with gathered rows and strided outputs; then the
// batch-invariance it promises: each row's result is the same bits alone and among others.
TEST(OpsGpu, GemvMatchesFloat64AndIsBatchInvariant) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{1, 8},
                             {3, 16},
                             {17, 1000},
                             {64, 4096},
                             {2051, 2048},
                             {1000, 8192}}) {
    const int64_t x_rows = 11, x_stride = k + 4, out_stride = n + 3;
    std::vector<float> x = Normal(rng, x_rows * x_stride);
    std::vector<uint16_t> w = ToBf16(Normal(rng, n * k));
    DeviceArray<float> d_x(x);
    DeviceArray<uint16_t> d_w(w);
    std::vector<std::vector<float>> alone(x_rows);  // Row r's outputs computed with m = 1.
    for (int64_t m = 1; m <= kGemvMaxRows; ++m) {
      SCOPED_TRACE(testing::Message() << "n " << n << " k " << k << " m " << m);
      std::vector<int32_t> rows(m);
      std::uniform_int_distribution<int32_t> pick(0, x_rows - 1);
      for (int32_t& r : rows) r = m == 1 ? 0 : pick(rng);
      if (m == 1) rows[0] = 5;
      DeviceArray<int32_t> d_rows(rows);
      DeviceArray<float> out(m * out_stride);
      out.Poison();
      const GemvParams p{d_x.get(), d_rows.get(), d_w.get(), out.get(), m, n,
                         k,         x_stride,     out_stride};
      ASSERT_TRUE(GemvServes(p));
      ExpectOk(LaunchGemvBf16(p, nullptr));
      const std::vector<float> got = out.Download();
      const std::vector<double> want = MatmulF64(x, x_stride, rows, w, n, k);
      std::vector<float> got_rows(m * n), want_rows(m * n);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          got_rows[i * n + j] = got[i * out_stride + j];
          want_rows[i * n + j] = static_cast<float>(want[i * n + j]);
        }
      }
      // fp32 sums of k products of unit-normal terms: rounding ~1e-7·√k relative to the terms.
      ExpectClose(got_rows, want_rows, 1e-5, 1e-6 * std::sqrt(static_cast<double>(k)));
      for (int64_t i = 0; i < m; ++i) {
        std::vector<float> row(got_rows.begin() + i * n, got_rows.begin() + (i + 1) * n);
        if (alone[rows[i]].empty()) {
          alone[rows[i]] = row;
        } else {
          EXPECT_EQ(std::memcmp(row.data(), alone[rows[i]].data(), n * sizeof(float)), 0)
              << "x row " << rows[i] << " at position " << i << " of " << m;
        }
      }
    }
  }
  // What the GEMV does not take is refused, for the caller's fallback.
  GemvParams odd{reinterpret_cast<const float*>(16),
                 nullptr,
                 reinterpret_cast<uint16_t*>(16),
                 reinterpret_cast<float*>(16),
                 1,
                 4,
                 12,
                 12,
                 4};
  EXPECT_FALSE(GemvServes(odd));  // k not a multiple of 8
  odd.k = odd.x_stride = 16;
  odd.m = kGemvMaxRows + 1;
  EXPECT_FALSE(GemvServes(odd));
}

// The fused neighbours: x rows RMS-normalised by the GEMV (never stored) and the product added
// into the output (the residual), against float64 RMSNorm then matmul then add.
TEST(OpsGpu, GemvFusesRmsNormAndResidualAdd) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  constexpr float kEps = 1e-5f;
  for (const auto& [m, n, k] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 5, 8}, {3, 129, 2048}, {8, 2048, 8192}}) {
    SCOPED_TRACE(testing::Message() << "m " << m << " n " << n << " k " << k);
    std::vector<float> x = Normal(rng, m * k, 3.0f), g = Normal(rng, k),
                       residual = Normal(rng, m * n);
    std::vector<uint16_t> w = ToBf16(Normal(rng, n * k));
    std::vector<float> want(m * n);
    for (int64_t i = 0; i < m; ++i) {
      double squares = 0;
      for (int64_t c = 0; c < k; ++c) squares += double{x[i * k + c]} * x[i * k + c];
      const double inv_rms = 1.0 / std::sqrt(squares / k + kEps);
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t c = 0; c < k; ++c) {
          sum += double{x[i * k + c]} * inv_rms * g[c] * base::Bf16ToFloat(w[j * k + c]);
        }
        want[i * n + j] = static_cast<float>(residual[i * n + j] + sum);
      }
    }
    DeviceArray<float> d_x(x), d_g(g), out(residual);
    DeviceArray<uint16_t> d_w(w);
    GemvParams p{d_x.get(), nullptr, d_w.get(), out.get(), m, n, k, k, n};
    p.norm_weight = d_g.get();
    p.norm_eps = kEps;
    p.accumulate = true;
    ExpectOk(LaunchGemvBf16(p, nullptr));
    ExpectClose(out.Download(), want, 1e-5, 1e-6 * std::sqrt(static_cast<double>(k)));
  }
}

}  // namespace
}  // namespace arbor::kernels
