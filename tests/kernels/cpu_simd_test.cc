// The shared SIMD helpers against float64 on fresh random inputs: the softmax numerators
// (ExpShifted, its own exp) within 4 ulp of e^x, zero below the float range, and their sum;
// the tiled dot products (DotRows) within fp32 rounding of the exact sums, for every count of
// rows and each row the same at any place; a GQA group's heads in one call, each with its own
// bits.
#include "kernels/cpu_simd.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"

namespace arbor::kernels::simd {
namespace {

TEST(CpuSimd, ExpShiftedMatchesFloat64) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-120.0f, 30.0f);
  for (int64_t n : {1, 7, 8, 9, 100, 1027}) {
    std::vector<float> s(n);
    for (float& v : s) v = value(rng);
    s[n / 2] = 40.0f;  // The max itself: e^0 = 1.
    const std::vector<float> in = s;
    const float sum = ExpShifted(s.data(), n, 40.0f);
    double expected_sum = 0.0;
    for (int64_t j = 0; j < n; ++j) {
      const double x = in[j] - 40.0f;  // The shifted value as the float subtraction rounds it.
      const double e = x < std::log(1.1754943508222875e-38) ? 0.0 : std::exp(x);
      expected_sum += e;
      EXPECT_NEAR(s[j], e, 4 * 1.2e-7 * e) << "x " << x;
    }
    EXPECT_EQ(s[n / 2], 1.0f);
    EXPECT_NEAR(sum, expected_sum, 1e-6 * expected_sum);
  }
}

TEST(CpuSimd, DotRowsMatchFloat64AndEachRowIsItsOwn) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> value;
  constexpr int64_t kDim = 64;
  std::vector<float> a(kDim), rows(19 * kDim);
  for (float& v : a) v = value(rng);
  for (float& v : rows) v = value(rng);
  std::vector<const float*> pointers;
  for (int64_t j = 0; j < 19; ++j) pointers.push_back(rows.data() + j * kDim);
  std::vector<float> all(19);
  DotRows(a.data(), 1, pointers.data(), 19, kDim, 0.125f, all.data(), 19);
  for (int64_t j = 0; j < 19; ++j) {
    double exact = 0.0, magnitude = 0.0;
    for (int64_t i = 0; i < kDim; ++i) {
      exact += static_cast<double>(a[i]) * rows[j * kDim + i];
      magnitude += std::abs(static_cast<double>(a[i]) * rows[j * kDim + i]);
    }
    EXPECT_NEAR(all[j], 0.125 * exact, 0.125 * magnitude * kDim * 6e-8) << "row " << j;
  }
  for (int64_t n = 1; n < 19; ++n) {  // Fewer rows, starting anywhere: the same bits.
    for (int64_t first = 0; first + n <= 19; first += 5) {
      std::vector<float> some(n);
      DotRows(a.data(), 1, pointers.data() + first, n, kDim, 0.125f, some.data(), n);
      for (int64_t j = 0; j < n; ++j) ASSERT_EQ(some[j], all[first + j]) << n << " " << first;
    }
  }
}

// The heads of a GQA group in one call (DotRows and WeightedRowSum over 1–7 queries, which the
// kernels take up to four at a time) give every head the bits its own call gives, for fp32 and
// bf16 rows, dims of whole and partial slices and key counts around the tiles; the weighted sums
// within fp32 rounding of float64.
template <typename T>
void CheckGroupedHeads(std::mt19937& rng) {
  std::normal_distribution<float> value;
  for (int64_t dim : {48, 64, 72, 128}) {
    for (int64_t n : {1, 3, 4, 5, 19, 33}) {
      for (int64_t queries : {1, 2, 3, 4, 5, 7}) {
        SCOPED_TRACE(::testing::Message() << "dim " << dim << " n " << n << " queries " << queries);
        std::vector<T> rows(n * dim);
        for (T& v : rows) {
          if constexpr (std::is_same_v<T, float>) {
            v = value(rng);
          } else {
            v = base::FloatToBf16(value(rng));
          }
        }
        std::vector<const T*> pointers;
        for (int64_t j = 0; j < n; ++j) pointers.push_back(rows.data() + j * dim);
        std::vector<float> a(queries * dim), w(queries * n), scale(queries);
        for (float& v : a) v = value(rng);
        for (float& v : w) v = std::abs(value(rng));
        for (float& v : scale) v = 0.5f + std::abs(value(rng));
        std::vector<float> scores(queries * n), sums(queries * dim);
        DotRows(a.data(), queries, pointers.data(), n, dim, 0.125f, scores.data(), n);
        WeightedRowSum(w.data(), n, queries, pointers.data(), n, dim, scale.data(), sums.data(),
                       dim);
        for (int64_t g = 0; g < queries; ++g) {
          std::vector<float> own_scores(n), own_sums(dim);
          DotRows(a.data() + g * dim, 1, pointers.data(), n, dim, 0.125f, own_scores.data(), n);
          WeightedRowSum(w.data() + g * n, n, 1, pointers.data(), n, dim, scale.data() + g,
                         own_sums.data(), dim);
          ASSERT_EQ(std::memcmp(own_scores.data(), scores.data() + g * n, n * sizeof(float)), 0)
              << "head " << g;
          ASSERT_EQ(std::memcmp(own_sums.data(), sums.data() + g * dim, dim * sizeof(float)), 0)
              << "head " << g;
          for (int64_t d = 0; d < dim; ++d) {
            double exact = 0.0, magnitude = 0.0;
            for (int64_t j = 0; j < n; ++j) {
              const double term = static_cast<double>(w[g * n + j]) * LoadScalar(pointers[j] + d);
              exact += term;
              magnitude += std::abs(term);
            }
            EXPECT_NEAR(own_sums[d], scale[g] * exact, scale[g] * magnitude * (n + 2) * 6e-8)
                << "head " << g << " value " << d;
          }
        }
      }
    }
  }
}

TEST(CpuSimd, GroupedHeadsGiveEachHeadItsOwnBits) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  CheckGroupedHeads<float>(rng);
  CheckGroupedHeads<uint16_t>(rng);
}

}  // namespace
}  // namespace arbor::kernels::simd
