// What the quantized-matmul tests share: random blocks of every weight type with their float64
// weights written from the block fields, random activations with outliers, and one kQ8 case
// checked against a float64 twin and the unquantized product (CheckQ8Case).
#ifndef ARBOR_TESTS_KERNELS_QUANT_TEST_SUPPORT_H_
#define ARBOR_TESTS_KERNELS_QUANT_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/quant/q8k_activations.h"
#include "kernels/quant/quant_blocks.h"

namespace arbor::kernels {

// Row r of `n` rows of `blocks` random blocks of `type`, and the same weights in float64.
struct QuantRows {
  std::vector<char> bytes;
  std::vector<double> w;  // [n, k].
};
QuantRows RandomRows(WeightType type, int64_t n, int64_t blocks, std::mt19937& rng);

// Random activations: normal, with a few outliers (the channels that make per-block scales
// matter) and, in row 1, an all-zero chunk (scale 0).
std::vector<float> RandomActivations(int64_t m, int64_t x_stride, std::mt19937& rng);

// Storage for m rows of per-256 activations (q8k_activations.h) of `blocks` super-blocks each,
// biased pairs included, every field first set to a value no quantizer writes there (so a
// comparison sees what one left out); rows[i] points into it.
struct Q8KRowsStorage {
  Q8KRowsStorage(int64_t m, int64_t blocks);
  Q8KRowsStorage(const Q8KRowsStorage&) = delete;
  Q8KRowsStorage& operator=(const Q8KRowsStorage&) = delete;

  std::vector<int8_t> q;
  std::vector<float> d, scaled_sums;
  std::vector<int16_t> sums;
  std::vector<uint8_t> pairs;
  std::vector<Q8KRow> rows;
};

// The largest errors a run of CheckQ8Case saw, relative to their bounds.
struct Worst {
  double twin = 0, exact = 0;
};

// One kQ8 case: `run` (the kernel under test, with and without threads) on fresh random weights
// of `type` and activations, against `twin` and against the float64 product of the unquantized
// activations, the activations quantized per `step_values` values (32 or 256).
template <typename Run>
void CheckQ8Case(WeightType type, int64_t m, int64_t n, int64_t blocks, int64_t step_values,
                 void (*twin_fn)(const MatmulParams&, double*), const Run& run, std::mt19937& rng,
                 ThreadPool& pool, Worst& worst) {
  const int64_t k = blocks * model::Layout(FileDType(type)).block_elements;
  const int64_t x_stride = k + 5, out_stride = n + 2;
  SCOPED_TRACE(::testing::Message()
               << "type " << static_cast<int>(type) << " m " << m << " n " << n << " k " << k);
  const QuantRows w = RandomRows(type, n, blocks, rng);
  const std::vector<float> x = RandomActivations(m, x_stride, rng);
  const MatmulParams base{.x = x.data(),
                          .w = w.bytes.data(),
                          .w_type = type,
                          .m = m,
                          .n = n,
                          .k = k,
                          .x_stride = x_stride,
                          .out_stride = out_stride};
  std::vector<double> twin(m * n);
  twin_fn(base, twin.data());
  for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
    std::vector<float> out(m * out_stride, -1.0f);
    MatmulParams p = base;
    p.out = out.data();
    run(p, threads);
    for (int64_t i = 0; i < m; ++i) {
      const float* xi = x.data() + i * x_stride;
      for (int64_t j = 0; j < n; ++j) {
        double exact = 0, scale = 0, step = 0;
        for (int64_t c0 = 0; c0 < k; c0 += step_values) {
          float amax = 0;
          for (int64_t c = c0; c < c0 + step_values; ++c) amax = std::max(amax, std::abs(xi[c]));
          for (int64_t c = c0; c < c0 + step_values; ++c) {
            const double wv = w.w[j * k + c];
            exact += xi[c] * wv;
            scale += std::abs(xi[c] * wv) + std::abs(wv) * amax / 127.0;
            step += std::abs(wv) * amax / 127.0 / 2;
          }
        }
        const double got = out[i * out_stride + j];
        const double error = std::abs(got - twin[i * n + j]);
        ASSERT_LE(error, 2e-6 * scale + 1e-6) << "out[" << i << ", " << j << "]";
        ASSERT_LE(std::abs(got - exact), step + 2e-6 * scale + 1e-6) << i << " " << j;
        worst.twin = std::max(worst.twin, error / (scale + 1e-30));
        worst.exact = std::max(worst.exact, std::abs(got - exact) / (step + 1e-30));
      }
      if (out_stride > n) {
        ASSERT_EQ(out[i * out_stride + n], -1.0f);
      }
    }
  }
}

// Prints `worst` for the run labelled `what`.
void PrintWorst(const std::string& what, const Worst& worst);

}  // namespace arbor::kernels

#endif  // ARBOR_TESTS_KERNELS_QUANT_TEST_SUPPORT_H_
