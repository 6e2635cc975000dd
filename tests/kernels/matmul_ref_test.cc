// Matmul and the logits projection against float64 on fresh random inputs: f32 and bf16
// weights, sizes that exercise every tile tail, single- and multi-threaded.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/bf16.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/logits.h"
#include "kernels/matmul.h"
#include "tests/support/test_seed.h"

namespace arbor::kernels {
namespace {

struct Weights {
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  // The exact values the op sees, as doubles.
  double At(WeightType type, int64_t i) const {
    return type == WeightType::kF32 ? f32[i] : base::Bf16ToFloat(bf16[i]);
  }
  const void* Data(WeightType type) const {
    return type == WeightType::kF32 ? static_cast<const void*>(f32.data()) : bf16.data();
  }
};

Weights RandomWeights(std::mt19937& rng, int64_t count) {
  std::normal_distribution<float> normal;
  Weights w;
  for (int64_t i = 0; i < count; ++i) {
    w.f32.push_back(normal(rng));
    w.bf16.push_back(base::FloatToBf16(w.f32.back()));
  }
  return w;
}

TEST(MatmulRef, MatchesFloat64) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  ThreadPool pool(3);
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{1, 13, 17}, Shape{3, 9, 64}, Shape{5, 33, 100},
                        Shape{37, 70, 31}, Shape{1, 515, 256}}) {
    const Weights w = RandomWeights(rng, s.n * s.k);
    const int64_t x_stride = s.k + 2, out_stride = s.n + 1;
    std::vector<float> x(s.m * x_stride);
    for (float& v : x) v = normal(rng);
    for (WeightType type : {WeightType::kF32, WeightType::kBF16}) {
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> out(s.m * out_stride, NAN);
        MatmulRef({x.data(), w.Data(type), type, out.data(), s.m, s.n, s.k, x_stride, out_stride},
                  p);
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < s.n; ++j) {
            double want = 0, mag = 0;
            for (int64_t l = 0; l < s.k; ++l) {
              want += double{x[i * x_stride + l]} * w.At(type, j * s.k + l);
              mag += std::abs(double{x[i * x_stride + l]} * w.At(type, j * s.k + l));
            }
            // fp32 accumulation: error bounded by a few ulps of the sum of magnitudes.
            ASSERT_NEAR(out[i * out_stride + j], want, 1e-6 * mag + 1e-7)
                << s.m << "x" << s.n << "x" << s.k << " at " << i << "," << j;
          }
          EXPECT_TRUE(std::isnan(out[i * out_stride + s.n])) << "wrote past the row";
        }
      }
    }
  }
}

TEST(LogitsRef, ProjectsOnlyTheChosenRows) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  ThreadPool pool(2);
  const int64_t hidden_rows = 9, dim = 24, vocab = 301, stride = dim + 4;
  const Weights w = RandomWeights(rng, vocab * dim);
  std::vector<float> hidden(hidden_rows * stride);
  for (float& v : hidden) v = normal(rng);
  const std::vector<int32_t> rows = {8, 0, 3, 3};
  std::vector<float> out(rows.size() * vocab);
  LogitsRef({hidden.data(), rows.data(), w.Data(WeightType::kBF16), WeightType::kBF16, out.data(),
             static_cast<int64_t>(rows.size()), dim, vocab, stride, vocab},
            &pool);
  for (size_t r = 0; r < rows.size(); ++r) {
    for (int64_t v = 0; v < vocab; ++v) {
      double want = 0, mag = 0;
      for (int64_t i = 0; i < dim; ++i) {
        const double term =
            double{hidden[rows[r] * stride + i]} * w.At(WeightType::kBF16, v * dim + i);
        want += term;
        mag += std::abs(term);
      }
      ASSERT_NEAR(out[r * vocab + v], want, 1e-6 * mag + 1e-7) << r << " " << v;
    }
  }
}

}  // namespace
}  // namespace arbor::kernels
