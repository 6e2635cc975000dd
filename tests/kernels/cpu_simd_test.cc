// The shared SIMD helpers against float64 on fresh random inputs: the softmax's shift (Max)
// wherever the largest falls; the softmax numerators (ExpShifted, its own exp) within 4 ulp of e^x,
// zero below the float range, and their sum; the tiled dot products (DotRows) within fp32 rounding
// of the exact sums, for every count of rows and each row the same at any place; a GQA group's
// heads in one call, each with its own bits; the 512-bit forms with the 256-bit forms' bits.
#include "kernels/cpu/cpu_simd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/test_seed.h"

namespace arbor::kernels::simd {
namespace {

TEST(CpuSimd, MaxFindsTheLargestWherever) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-50.0f, 50.0f);
  // Around each vector width and the four maxima's stride, the largest in each place in turn.
  for (int64_t n : {1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 96, 100, 1027}) {
    std::vector<float> s(n);
    for (float& v : s) v = value(rng);
    for (int64_t at = 0; at < n; ++at) {
      std::vector<float> t = s;
      t[at] = 60.0f + static_cast<float>(at % 5);
      ASSERT_EQ(Max(t.data(), n), *std::max_element(t.begin(), t.end()))
          << "n " << n << " at " << at;
    }
  }
}

TEST(CpuSimd, ExpShiftedMatchesFloat64) {
  const uint32_t seed = TestSeed();
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
  const uint32_t seed = TestSeed();
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

// `count` standard normal values as fp32 or bf16 (a KV row's dtypes).
template <typename T>
std::vector<T> RandomValues(int64_t count, std::mt19937& rng) {
  std::normal_distribution<float> value;
  std::vector<T> values(count);
  for (T& v : values) {
    if constexpr (std::is_same_v<T, float>) {
      v = value(rng);
    } else {
      v = base::FloatToBf16(value(rng));
    }
  }
  return values;
}

// The heads of a GQA group in one call (DotRows and WeightedRowSum over 1–8 and 13 queries, which
// the kernels take up to four or six at a time) give every head the bits its own call gives, and
// the weighted sums taken over the keys in runs the bits of one call, for fp32 and bf16 rows, dims
// of whole and partial slices and key counts around the tiles; the weighted sums within fp32
// rounding of float64.
template <typename T>
void CheckGroupedHeads(std::mt19937& rng) {
  std::normal_distribution<float> value;
  for (int64_t dim : {48, 64, 72, 128}) {
    for (int64_t n : {1, 3, 4, 5, 19, 33}) {
      for (int64_t queries : {1, 2, 3, 4, 5, 6, 7, 8, 13}) {
        SCOPED_TRACE(::testing::Message() << "dim " << dim << " n " << n << " queries " << queries);
        const std::vector<T> rows = RandomValues<T>(n * dim, rng);
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
        // The keys in runs of 1, 2, 3, … (unscaled, resumed, the last scaled): the same bits.
        std::vector<float> parts(queries * dim);
        for (int64_t j = 0, run = 1; j < n; j += run, ++run) {
          const int64_t count = std::min(run, n - j);
          WeightedRowSum(w.data() + j, n, queries, pointers.data() + j, count, dim,
                         j + count == n ? scale.data() : nullptr, parts.data(), dim,
                         /*resume=*/j > 0);
        }
        ASSERT_EQ(std::memcmp(parts.data(), sums.data(), sums.size() * sizeof(float)), 0);
      }
    }
  }
}

TEST(CpuSimd, GroupedHeadsGiveEachHeadItsOwnBits) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  CheckGroupedHeads<float>(rng);
  CheckGroupedHeads<uint16_t>(rng);
}

#ifdef ARBOR_CPU_AVX512
// The 512-bit forms give the 256-bit forms' bits, so a score or a weighted sum does not depend on
// which of them a build runs: the exponential lane for lane (ExpNonPositive16 against
// ExpNonPositive, from −100 to 0), the four-row tiles of scores for 1–4 queries and 1–4 rows, and
// the weighted sums' slices, fp32 and bf16 rows.
template <typename T>
void CheckWideFormsMatch(std::mt19937& rng) {
  std::normal_distribution<float> value;
  constexpr int64_t kDim = 64, kRows = 4;
  const std::vector<T> rows = RandomValues<T>(kRows * kDim, rng);
  std::vector<const T*> pointers;
  for (int64_t j = 0; j < kRows; ++j) pointers.push_back(rows.data() + j * kDim);
  std::vector<float> a(4 * kDim), w(4 * kRows), scale(4, 0.75f);
  for (float& v : a) v = value(rng);
  for (float& v : w) v = std::abs(value(rng));
  std::vector<float> narrow(4 * kDim), wide(4 * kDim);
  for (int64_t tile = 1; tile <= kRows; ++tile) {
    DotRowsTile<4, T>(a.data(), pointers.data(), 0, tile, kDim, 0.125f, narrow.data(), kRows);
    DotRowsTile16<4, T>(a.data(), pointers.data(), 0, tile, kDim, 0.125f, wide.data(), kRows);
    for (int64_t g = 0; g < 4; ++g) {
      for (int64_t j = 0; j < tile; ++j) {
        ASSERT_EQ(narrow[g * kRows + j], wide[g * kRows + j]) << "tile " << tile << " row " << j;
      }
    }
  }
  WeightedRowSumLanes<Lanes8, 4, 8, T>(w.data(), kRows, pointers.data(), kRows, 0, scale.data(),
                                       /*resume=*/false, narrow.data(), kDim);
  WeightedRowSumLanes<Lanes16, 4, 4, T>(w.data(), kRows, pointers.data(), kRows, 0, scale.data(),
                                        /*resume=*/false, wide.data(), kDim);
  ASSERT_EQ(std::memcmp(narrow.data(), wide.data(), narrow.size() * sizeof(float)), 0);
}

TEST(CpuSimd, WideFormsGiveTheNarrowFormsBits) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> exponent(-100.0f, 0.0f);
  for (int round = 0; round < 1000; ++round) {
    alignas(64) float x[16], narrow[16], wide[16];
    for (float& v : x) v = exponent(rng);
    _mm256_storeu_ps(narrow, ExpNonPositive(_mm256_loadu_ps(x)));
    _mm256_storeu_ps(narrow + 8, ExpNonPositive(_mm256_loadu_ps(x + 8)));
    _mm512_storeu_ps(wide, ExpNonPositive16(_mm512_loadu_ps(x)));
    ASSERT_EQ(std::memcmp(narrow, wide, sizeof(narrow)), 0) << "round " << round;
  }
  CheckWideFormsMatch<float>(rng);
  CheckWideFormsMatch<uint16_t>(rng);
}
#endif

}  // namespace
}  // namespace arbor::kernels::simd
