// The quantized matmul (kernels/quant/quant_matmul.h) against its float64 twin: dequantize, then
// multiply in float64. For Q8_0/Q4_0/Q4_1 the weights are decoded here straight from the block
// fields (w = d·q + m, written from the GGUF layout, not with the kernel's code); for the
// K-quants by the scalar dequantizer, itself checked against llama.cpp's gguf package. Every
// type, odd row counts (1, 3, 5, 37), odd output counts (1, 3, 7, 33), 1 to 3 blocks per row,
// strided x and out, with and without a thread pool, fresh random blocks each run (seed printed).
// Bound: the kernel sums in fp32, so |Δ| ≤ 1e-5 · Σ_k |x_k·w_k| + 1e-6 (seen: under 1e-6 relative).
// The kQ8 mode (8-bit activations, every instruction set the CPU runs) has its own tests below.
#include "kernels/quant/quant_matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/embedding.h"
#include "kernels/quant/q8_activations.h"
#include "kernels/quant/q8k_activations.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_dot.h"
#include "kernels/quant/quant_matmul_twin.h"
#include "tests/kernels/quant_test_support.h"
#include "tests/support/test_seed.h"

namespace arbor::kernels {
namespace {

TEST(QuantMatmul, MatchesFloat64Twin) {
  const uint32_t seed = TestSeed();
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
              if (out_stride > n) {
                ASSERT_EQ(out[i * out_stride + n], -1.0f);
              }
            }
          }
        }
      }
    }
  }
  std::cout << "largest |error| / Σ|x·w|: " << worst << "\n";
}

constexpr WeightType kQuantTypes[] = {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_1,
                                      WeightType::kQ5_0, WeightType::kQ5_1, WeightType::kQ4_K,
                                      WeightType::kQ5_K, WeightType::kQ6_K};

// The vector activation quantizer equals the scalar definition bit for bit, and that definition
// rounds to nearest: |x − d·q| ≤ d/2, |q| ≤ 127 with 127 reached, with Σq per chunk.
TEST(QuantMatmulQ8, ActivationQuantizerMatchesDefinition) {
  if (!CpuRunsQ8Isa(Q8Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  const int64_t m = 5, chunks = 7, k = chunks * kQuantBlock, x_stride = k + 3;
  std::vector<float> x = RandomActivations(m, x_stride, rng);
  x[5] = 0.5f * 127;  // Halfway cases when amax is 127: rounded to even.
  x[6] = 127.0f;
  x[7] = 1.5f;
  auto make = [&](std::vector<int8_t>& q, std::vector<float>& f, std::vector<int32_t>& sums) {
    q.assign(m * chunks * 32, 7);
    f.assign(m * chunks * 8 + SumsSize(m, chunks), -1.0f);
    sums.assign(m * chunks, -1);
    return Q8Rows{q.data(), f.data(), f.data() + m * chunks * 8, sums.data(), chunks, chunks};
  };
  std::vector<int8_t> q_ref, q_vec;
  std::vector<float> f_ref, f_vec;
  std::vector<int32_t> sums_ref, sums_vec;
  const Q8Rows ref = make(q_ref, f_ref, sums_ref), vec = make(q_vec, f_vec, sums_vec);
  for (int64_t i = 0; i < m; ++i) QuantizeQ8RowRef(x.data() + i * x_stride, i, ref);
  avx2::QuantizeQ8Rows(x.data(), x_stride, 0, m, vec);
  EXPECT_EQ(q_ref, q_vec);
  EXPECT_EQ(f_ref, f_vec);
  EXPECT_EQ(sums_ref, sums_vec);
  for (int64_t at = 0; at < m * chunks; ++at) {
    int sum = 0;
    for (int j = 0; j < kQuantBlock; ++j) sum += ref.q[32 * at + j];
    EXPECT_EQ(sums_ref[at], sum) << at;
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t c = 0; c < chunks; ++c) {
      const float d = ref.scales[8 * (i * chunks + c)];
      int largest = 0;
      for (int j = 0; j < kQuantBlock; ++j) {
        const int q = ref.q[32 * (i * chunks + c) + j];
        largest = std::max(largest, std::abs(q));
        ASSERT_LE(std::abs(x[i * x_stride + 32 * c + j] - d * q), d / 2 * (1 + 1e-6));
      }
      EXPECT_EQ(largest, d == 0 ? 0 : 127) << i << " " << c;
    }
  }
  EXPECT_EQ(ref.q[5], 64);  // 63.5 → 64 (even).
  EXPECT_EQ(ref.q[7], 2);   // 1.5 → 2 (even).
}

// What CpuRunsQ8Isa asks of the CPU (and OS) for `isa`'s kernels, for a skip's message.
const char* Q8IsaNeeds(Q8Isa isa) {
  switch (isa) {
    case Q8Isa::kAvx2:
      return "AVX2, FMA and F16C";
    case Q8Isa::kAvxVnni:
      return "AVX-VNNI and AVX2";
    case Q8Isa::kAvx512Vnni:
      return "AVX-512 F, BW, VL and VNNI, and AVX2";
    default:
      return "AMX-INT8 (tiles granted by the OS) and AVX-512 VNNI";
  }
}

}  // namespace

// How GoogleTest prints an instruction set, and so how ctest names its case (".../amx"; the
// NEEDS labels of tests/kernels/CMakeLists.txt match these names). Found by argument-dependent
// lookup, so in Q8Isa's own namespace.
void PrintTo(Q8Isa isa, std::ostream* os) { *os << Q8IsaName(isa); }

namespace {

// One case per instruction set, so that each runs where the CPU has it and is reported skipped,
// naming what is missing, where it does not.
class QuantMatmulQ8OnIsa : public ::testing::TestWithParam<Q8Isa> {};

// Every kQ8 kernel against the float64 twin (QuantMatmulQ8Twin), and against the float64 product
// of the unquantized activations within the quantization's own error.
// Bounds (Σ|x̃·w| taken as Σ|x·w| + Σ|w|·d: x̃ is within d/2 of x):
//  · twin: |Δ| ≤ 2e-6 · Σ_k |x̃_k·w_k| + 1e-6 — the integer sums are exact, so the kernels' only
//    error is fp32 rounding of the scales, of the sums d·Σq and of the accumulation (worst seen
//    over 15 seeds × 3 instruction sets: 8.6e-7);
//  · exact: |Δ| ≤ Σ_k |w_k|·d_k/2 + the twin's bound, d_k the scale of x_k's chunk: rounding to
//    nearest moves each x by at most half a step (worst seen: 0.57 of that).
TEST_P(QuantMatmulQ8OnIsa, MatchesFloat64Twin) {
  const Q8Isa isa = GetParam();
  if (!CpuRunsQ8Isa(isa)) {
    GTEST_SKIP() << "the " << Q8IsaName(isa) << " kernels need " << Q8IsaNeeds(isa)
                 << ", which this CPU lacks";
  }
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  ThreadPool pool(2);
  Worst worst;
  const auto run = [isa](const MatmulParams& p, ThreadPool* threads) {
    QuantMatmulQ8(p, isa, threads);
  };
  for (WeightType type : kQuantTypes) {
    for (int64_t m : {1, 3, 5, 37}) {
      for (int64_t n : {1, 3, 7, 33}) {
        for (int64_t blocks : {1, 2, 3}) {
          CheckQ8Case(type, m, n, blocks, kQuantBlock, QuantMatmulQ8Twin, run, rng, pool, worst);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
  PrintWorst(Q8IsaName(isa), worst);
}

INSTANTIATE_TEST_SUITE_P(EveryInstructionSet, QuantMatmulQ8OnIsa,
                         ::testing::Values(Q8Isa::kAvx2, Q8Isa::kAvxVnni, Q8Isa::kAvx512Vnni,
                                           Q8Isa::kAmx));

// QuantMatmul with activation_quant = kQ8 is QuantMatmulQ8 on Q8IsaForRows's instruction set —
// QuantMatmulQ8K for Q4_K and Q6_K at up to kQ8KMaxRows rows — and kF32 (the default) the exact
// path.
TEST(QuantMatmulQ8, DispatchFollowsActivationQuant) {
  std::mt19937 rng(11);
  const int64_t n = 5, k = 2 * kSuperBlock;
  for (const auto& [type, m] :
       {std::pair{WeightType::kQ4_K, int64_t{3}}, std::pair{WeightType::kQ4_K, int64_t{4}},
        std::pair{WeightType::kQ6_K, int64_t{1}}, std::pair{WeightType::kQ5_K, int64_t{3}}}) {
    SCOPED_TRACE(::testing::Message() << "type " << static_cast<int>(type) << " m " << m);
    const QuantRows w = RandomRows(type, n, 2, rng);
    const std::vector<float> x = RandomActivations(m, k, rng);
    std::vector<float> q8(m * n), f32(m * n), direct(m * n);
    MatmulParams p{x.data(), w.bytes.data(), type, f32.data(), m, n, k, k, n};
    QuantMatmul(p, nullptr);
    p.activation_quant = ActivationQuant::kQ8;
    p.out = q8.data();
    QuantMatmul(p, nullptr);
    const std::optional<Q8Isa> chosen = Q8IsaForRows(m);
    if (!chosen.has_value()) {
      EXPECT_EQ(q8, f32);
      continue;
    }
    p.out = direct.data();
    if (m <= kQ8KMaxRows) {
      EXPECT_EQ(TakesQ8K(p), type == WeightType::kQ4_K || type == WeightType::kQ6_K);
    }
    if (TakesQ8K(p)) {
      QuantMatmulQ8K(p, nullptr);
    } else {
      QuantMatmulQ8(p, *chosen, nullptr);
    }
    EXPECT_EQ(q8, direct);
    EXPECT_NE(q8, f32);  // 8-bit activations do change the low bits.
  }
}

// The per-256 quantizer rounds to nearest: |x − d·q| ≤ d/2 with d = max|x| / 127 per 256
// values, |q| ≤ 127 with 127 reached, the sums are Σq and d·Σq per 16, and an all-zero block is
// d = 0.
TEST(QuantMatmulQ8K, ActivationQuantizerRoundsToNearest) {
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  const int64_t blocks = 3;
  std::vector<float> x = RandomActivations(1, blocks * kSuperBlock, rng);
  std::fill(x.begin() + kSuperBlock, x.begin() + 2 * kSuperBlock, 0.0f);
  std::vector<int8_t> q(blocks * kSuperBlock, 7);
  std::vector<float> d(blocks, -1.0f);
  std::vector<int16_t> sums(blocks * 16, -1);
  std::vector<float> scaled_sums(blocks * 16, -1.0f);
  QuantizeQ8KRow(x.data(), {q.data(), d.data(), sums.data(), scaled_sums.data(), nullptr, blocks});
  for (int64_t b = 0; b < blocks; ++b) {
    int largest = 0;
    for (int s = 0; s < 16; ++s) {
      int sum = 0;
      for (int64_t j = b * kSuperBlock + 16 * s; j < b * kSuperBlock + 16 * s + 16; ++j) {
        ASSERT_LE(std::abs(x[j] - d[b] * q[j]), d[b] / 2 * (1 + 1e-6)) << j;
        largest = std::max(largest, std::abs(int{q[j]}));
        sum += q[j];
      }
      EXPECT_EQ(sums[16 * b + s], sum) << b << " " << s;
      EXPECT_EQ(scaled_sums[16 * b + s], d[b] * static_cast<float>(sum)) << b << " " << s;
    }
    EXPECT_EQ(largest, b == 1 ? 0 : 127) << b;
    if (b == 1) {
      EXPECT_EQ(d[b], 0.0f);
    }
  }
}

// The vector per-256 quantizer equals the scalar definition bit for bit (integers, scales and
// both sums, halfway cases and an all-zero block included), and the biased pairs the repacked
// Q6_K kernel reads are q + 128 with each 32's dwords in the order 0, 4, 1, 5, 2, 6, 3, 7.
TEST(QuantMatmulQ8K, VectorQuantizerMatchesDefinition) {
  if (!CpuRunsQ8Isa(Q8Isa::kAvx2)) GTEST_SKIP() << "no AVX2";
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  const int64_t m = 3, blocks = 3, k = blocks * kSuperBlock, x_stride = k + 5;
  std::vector<float> x = RandomActivations(m, x_stride, rng);
  std::fill(x.begin() + kSuperBlock, x.begin() + 2 * kSuperBlock, 0.0f);
  // Halfway cases when amax is 127 (no other value of the block as large): rounded to even.
  for (int64_t j = 2 * kSuperBlock; j < 3 * kSuperBlock; ++j) {
    x[j] = std::clamp(x[j], -126.0f, 126.0f);
  }
  x[2 * kSuperBlock] = 127.0f;
  x[2 * kSuperBlock + 1] = 0.5f * 127;
  x[2 * kSuperBlock + 2] = 1.5f;
  Q8KRowsStorage ref(m, blocks), vec(m, blocks);
  for (int64_t i = 0; i < m; ++i) QuantizeQ8KRow(x.data() + i * x_stride, ref.rows[i]);
  avx2::QuantizeQ8KRows(x.data(), x_stride, 0, m, vec.rows.data());
  EXPECT_EQ(ref.q, vec.q);
  EXPECT_EQ(ref.d, vec.d);
  EXPECT_EQ(ref.sums, vec.sums);
  EXPECT_EQ(ref.scaled_sums, vec.scaled_sums);
  EXPECT_EQ(ref.q[2 * kSuperBlock + 1], 64);  // 63.5 → 64 (even).
  EXPECT_EQ(ref.q[2 * kSuperBlock + 2], 2);   // 1.5 → 2 (even).
  for (int64_t j = 0; j < m * k; ++j) {
    const int64_t c = j / 32, dword = j % 32 / 4;
    const int64_t from = 32 * c + 4 * (dword / 2) + 16 * (dword % 2) + j % 4;
    ASSERT_EQ(vec.pairs[j], static_cast<uint8_t>(ref.q[from] + 128)) << j;
  }
}

// QuantMatmulQ8K (Q4_K and Q6_K) against its float64 twin (QuantMatmulQ8KTwin) and against the
// float64 product of the unquantized activations, as the kQ8 test above, with the activation step
// of each 256-value block: |Δ twin| ≤ 2e-6 · Σ|x̃·w| + 1e-6 (the integer sums are exact; fp32
// rounding of the scales and the accumulation remain), |Δ exact| ≤ Σ|w|·d/2 + the same.
TEST(QuantMatmulQ8K, MatchesFloat64Twin) {
  if (!CpuRunsQ8Isa(Q8Isa::kAvx2)) GTEST_SKIP() << "no AVX2: kQ8 requests run in kF32";
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  ThreadPool pool(2);
  Worst worst;
  for (WeightType type : {WeightType::kQ4_K, WeightType::kQ6_K}) {
    for (int64_t m : {1, 2, 3, 5, 8, 11, 37}) {  // Past 3: groups of 8 where AVX-512 runs.
      for (int64_t n : {1, 3, 37}) {
        for (int64_t blocks : {1, 2, 3}) {
          CheckQ8Case(type, m, n, blocks, kSuperBlock, QuantMatmulQ8KTwin, QuantMatmulQ8K, rng,
                      pool, worst);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
  PrintWorst("per-256", worst);
}

// base::FloatToHalf (the Q8_0 quantizer's scale rounding): every finite half survives the round
// trip, and values halfway between two halves go to the even one.
// Batch invariance (MatmulParams::batch_invariant, the default): a row's output is bit-identical
// alone and among 1 to 63 other rows at the front, middle or end, on 1 or 2 threads, for every
// weight type and both activation modes: one kernel and one summation order at every row count.
// Fresh random weights and rows each run (seed printed).
TEST(QuantMatmul, EveryRowIsIndependentOfItsBatch) {
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  ThreadPool pool(2);
  const int64_t n = 40, k = 3 * kSuperBlock;
  std::vector<WeightType> types(std::begin(kQuantTypes), std::end(kQuantTypes));
  types.push_back(WeightType::kF32);
  for (WeightType type : types) {
    std::vector<char> w;
    if (type == WeightType::kF32) {
      const std::vector<float> f = RandomActivations(n, k, rng);
      w.assign(reinterpret_cast<const char*>(f.data()),
               reinterpret_cast<const char*>(f.data() + f.size()));
    } else {
      w = RandomRows(type, n, k / model::Layout(FileDType(type)).block_elements, rng).bytes;
    }
    for (ActivationQuant mode : {ActivationQuant::kF32, ActivationQuant::kQ8}) {
      SCOPED_TRACE(::testing::Message()
                   << "type " << static_cast<int>(type) << " mode " << static_cast<int>(mode));
      const std::vector<float> row = RandomActivations(1, k, rng);
      std::vector<float> alone(n);
      MatmulRef({row.data(), w.data(), type, alone.data(), 1, n, k, k, n, mode}, nullptr);
      for (int64_t m : {2, 3, 4, 5, 8, 9, 12, 13, 16, 33, 64}) {
        for (int64_t at : {int64_t{0}, m / 2, m - 1}) {
          std::vector<float> x = RandomActivations(m, k, rng);
          std::copy(row.begin(), row.end(), x.begin() + at * k);
          for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
            std::vector<float> out(m * n);
            MatmulRef({x.data(), w.data(), type, out.data(), m, n, k, k, n, mode}, threads);
            ASSERT_EQ(std::memcmp(out.data() + at * n, alone.data(), n * sizeof(float)), 0)
                << "row " << at << " of " << m << (threads ? ", 2 threads" : ", 1 thread") << ": "
                << out[at * n] << " vs " << alone[0] << " alone";
          }
        }
      }
    }
  }
}

TEST(Half, RoundTripsEveryHalfAndRoundsMidpointsToEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;  // inf, NaN.
    const float f = base::HalfToFloat(static_cast<uint16_t>(h));
    ASSERT_EQ(base::FloatToHalf(f), h) << h;
    if ((h & 0x7fff) == 0x7bff) continue;  // The largest finite: its upper midpoint overflows.
    const float next = base::HalfToFloat(static_cast<uint16_t>(h + 1));
    const uint16_t even = (h & 1) == 0 ? h : h + 1;
    if ((h & 0x8000) == 0) {
      ASSERT_EQ(base::FloatToHalf(f + (next - f) / 2), even) << h;
    }
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
