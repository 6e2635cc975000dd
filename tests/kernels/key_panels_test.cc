// The key panels (kernels/key_panels.h) against DotRows on fresh random inputs: every score the
// same bits for 1–8 and 13 queries, fp32 and bf16 rows, dims from 8 to 128 and key counts around
// the panels' width, read from the first panel or a later one. Built twice: with the project's
// flags and in the scalar build (kernels_quant_matmul_scalar_test).
#include "kernels/key_panels.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "base/bf16.h"
#include "tests/support/test_seed.h"

namespace arbor::kernels::simd {
namespace {

template <typename T>
void CheckPanelsGiveDotRowsBits(std::mt19937& rng) {
  std::normal_distribution<float> value;
  for (int64_t dim : {8, 16, 20, 40, 64, 72, 128}) {
    if (!PanelsServe(dim)) continue;  // 20: only a build without AVX2 takes it.
    for (int64_t n : {1, 5, 15, 16, 17, 31, 33, 64, 70}) {
      for (int64_t queries : {1, 2, 3, 4, 5, 6, 7, 8, 13}) {
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
        std::vector<float> a(queries * dim);
        for (float& v : a) v = value(rng);
        std::vector<float> panels(PanelFloats(n, dim));
        TransposeKeys(pointers.data(), n, dim, panels.data());
        // All keys, then those from the second panel on (a later tile of keys).
        for (int64_t j0 : {int64_t{0}, kPanelKeys}) {
          if (j0 >= n) continue;
          const int64_t count = n - j0;
          std::vector<float> want(queries * count), got(queries * count);
          DotRows(a.data(), queries, pointers.data() + j0, count, dim, 0.125f, want.data(), count);
          DotPanels(a.data(), queries, panels.data() + j0 * dim, count, dim, 0.125f, got.data(),
                    count);
          ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
              << "from key " << j0;
        }
      }
    }
  }
}

TEST(KeyPanels, ScoresAreDotRowsBits) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  CheckPanelsGiveDotRowsBits<float>(rng);
  CheckPanelsGiveDotRowsBits<uint16_t>(rng);
}

}  // namespace
}  // namespace arbor::kernels::simd
