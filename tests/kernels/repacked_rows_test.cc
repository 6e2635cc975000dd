// The repacked layouts (kernels/quant/repacked_rows.h) and the grouped projections
// (kernels::MatmulGroupRef): repacked blocks hold the file's blocks bit for bit, the repacked
// kernel meets the per-32 kernels' float64-twin bound and keeps every row independent of its
// batch, and a group of matrices gives what each one's own matmul gives; the kernels' passes over
// the activation rows are as few and as even as their width allows.
#include "kernels/quant/repacked_rows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/bf16.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_chunks.h"
#include "kernels/quant/quant_dot.h"
#include "kernels/quant/quant_matmul.h"
#include "kernels/quant/quant_matmul_twin.h"
#include "kernels/quant/row_passes.h"
#include "tests/kernels/quant_test_support.h"
#include "tests/support/test_seed.h"

namespace arbor::kernels {
namespace {

// The repacked layouts hold the file's blocks exactly: unpacked here by repacked_rows.h's
// description (lane l of a vector holds four bytes of row l % 16), every scale, offset and weight
// byte of every row comes back bit for bit (Q4_0's offset as −8·d, exact; Q8_0's bytes less 128,
// with no offset field).
TEST(QuantMatmulRepacked, RepackedBlocksUnpackToTheFilesBlocks) {
  std::mt19937 rng(7);
  const int64_t n = 32, blocks = 3, k = blocks * kQuantBlock;
  for (WeightType type : {WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ8_0}) {
    SCOPED_TRACE(static_cast<int>(type));
    const QuantRows file = RandomRows(type, n, blocks, rng);
    const std::vector<char> packed = RepackRows(type, file.bytes.data(), n, k);
    const bool q8 = type == WeightType::kQ8_0;
    const size_t group_bytes = q8 ? sizeof(Q8x16Block) : sizeof(Q4x16Block);
    ASSERT_EQ(packed.size(), static_cast<size_t>(n / 16 * blocks) * group_bytes);
    for (int64_t row = 0; row < n; ++row) {
      for (int64_t b = 0; b < blocks; ++b) {
        const char* group = packed.data() + ((row / 16) * blocks + b) * group_bytes;
        const int lane = static_cast<int>(row % 16);
        uint16_t d, m;
        std::memcpy(&d, group + 2 * lane, 2);
        std::memcpy(&m, group + 32 + 2 * lane, 2);  // Q8_0: no offsets, the weights from 32.
        const uint8_t* qs = reinterpret_cast<const uint8_t*>(group + (q8 ? 32 : 64));
        const char* block =
            file.bytes.data() + (row * blocks + b) * (q8                          ? 34
                                                      : type == WeightType::kQ4_1 ? 20
                                                                                  : 18);
        uint16_t file_d;
        std::memcpy(&file_d, block, 2);
        EXPECT_EQ(d, file_d);
        const float d_value = base::HalfToFloat(d);
        if (type == WeightType::kQ4_1) {
          uint16_t file_m;
          std::memcpy(&file_m, block + 2, 2);
          EXPECT_EQ(m, file_m);
        } else if (!q8) {
          EXPECT_EQ(base::HalfToFloat(m), -8.0f * d_value);
        }
        const int file_bytes = q8 ? 32 : 16;
        const uint8_t* file_qs =
            reinterpret_cast<const uint8_t*>(block + (type == WeightType::kQ4_1 ? 4 : 2));
        for (int j = 0; j < file_bytes; ++j) {
          // Byte j of the row: vector j / 4, lane `lane`, byte j % 4.
          const uint8_t got = qs[64 * (j / 4) + 4 * lane + j % 4];
          EXPECT_EQ(got,
                    q8 ? static_cast<uint8_t>(static_cast<int8_t>(file_qs[j]) + 128) : file_qs[j])
              << "row " << row << " block " << b << " byte " << j;
        }
      }
    }
  }
}

// Q5_0's and Q5_1's repacked blocks hold the file's: every row's d (and Q5_1's m) bit for bit,
// Q5_0's offset as −16·d, its 16 nibble bytes where Q4's go (vector j / 4, lane `row`), and the
// fifth bit of each weight j at bit 4·lane + j % 4 of mask j / 4.
TEST(QuantMatmulRepacked, RepackedQ5BlocksHoldTheFilesBlocks) {
  std::mt19937 rng(9);
  const int64_t n = 32, blocks = 3, k = blocks * kQuantBlock;
  for (WeightType type : {WeightType::kQ5_0, WeightType::kQ5_1}) {
    SCOPED_TRACE(static_cast<int>(type));
    const bool q5_1 = type == WeightType::kQ5_1;
    const QuantRows file = RandomRows(type, n, blocks, rng);
    const std::vector<char> packed = RepackRows(type, file.bytes.data(), n, k);
    ASSERT_EQ(packed.size(), static_cast<size_t>(n / 16 * blocks) * sizeof(Q5x16Block));
    const auto* groups = reinterpret_cast<const Q5x16Block*>(packed.data());
    for (int64_t row = 0; row < n; ++row) {
      for (int64_t b = 0; b < blocks; ++b) {
        const Q5x16Block& group = groups[(row / 16) * blocks + b];
        const int lane = static_cast<int>(row % 16);
        const char* block = file.bytes.data() + (row * blocks + b) * (q5_1 ? 24 : 22);
        uint16_t d, m;
        uint32_t qh;
        std::memcpy(&d, block, 2);
        std::memcpy(&m, block + 2, 2);
        std::memcpy(&qh, block + (q5_1 ? 4 : 2), 4);
        const auto* qs = reinterpret_cast<const uint8_t*>(block + (q5_1 ? 8 : 6));
        EXPECT_EQ(group.d[lane], d);
        if (q5_1) {
          EXPECT_EQ(group.m[lane], m);
        } else {
          EXPECT_EQ(base::HalfToFloat(group.m[lane]), -16.0f * base::HalfToFloat(d));
        }
        for (int j = 0; j < 16; ++j) {
          EXPECT_EQ(group.qs[64 * (j / 4) + 4 * lane + j % 4], qs[j])
              << "row " << row << " byte " << j;
        }
        for (int j = 0; j < 32; ++j) {
          EXPECT_EQ((group.qh[j / 4] >> (4 * lane + j % 4)) & 1, (qh >> j) & 1)
              << "row " << row << " weight " << j;
        }
      }
    }
  }
}

// Byte j (0–31) of row `lane` in 256 bytes of a repacked K-quant block (repacked_rows.h: vector j /
// 8, qword `lane`).
int SpreadByte(int lane, int j) { return 64 * (j / 8) + 8 * lane + j % 8; }

// Q4_K's and Q5_K's repacked super-blocks hold the file's: every row's d and dmin bit for bit,
// each sub-block's scale and minimum as ScaleMinK4 reads them from the packed 6-bit fields, its
// 128 nibble bytes where repacked_rows.h says (quarter p, vector j / 8, qword `row`), and Q5_K's
// 32 bytes of fifth bits spread alike. Block: BlockQ4_K or BlockQ5_K; Group: its repacked group.
template <typename Block, typename Group>
void CheckQ4KLikeSuperBlocks(WeightType type, std::mt19937& rng) {
  const int64_t n = 16, blocks = 3, k = blocks * kSuperBlock;
  const QuantRows file = RandomRows(type, n, blocks, rng);
  const std::vector<char> packed = RepackRows(type, file.bytes.data(), n, k);
  ASSERT_EQ(packed.size(), static_cast<size_t>(n / 8 * blocks) * sizeof(Group));
  const auto* groups = reinterpret_cast<const Group*>(packed.data());
  const auto* rows = reinterpret_cast<const Block*>(file.bytes.data());
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t b = 0; b < blocks; ++b) {
      SCOPED_TRACE(::testing::Message() << "row " << row << " super-block " << b);
      const Group& whole = groups[(row / 8) * blocks + b];
      const Q4Kx8Block* group;
      if constexpr (std::is_same_v<Group, Q5Kx8Block>) {
        group = &whole.low;
      } else {
        group = &whole;
      }
      const Block& block = rows[row * blocks + b];
      const int lane = static_cast<int>(row % 8);
      EXPECT_EQ(group->d[lane], block.d);
      EXPECT_EQ(group->dmin[lane], block.dmin);
      for (int j = 0; j < 8; ++j) {
        int scale = 0, min = 0;
        ScaleMinK4(j, block.scales, &scale, &min);
        EXPECT_EQ(group->scales[j][lane], scale) << "sub-block " << j;
        EXPECT_EQ(group->mins[j][lane], min) << "sub-block " << j;
      }
      for (int p = 0; p < 4; ++p) {
        for (int j = 0; j < 32; ++j) {
          EXPECT_EQ(group->qs[p][SpreadByte(lane, j)], block.qs[32 * p + j])
              << "pair " << p << " byte " << j;
        }
      }
      if constexpr (std::is_same_v<Group, Q5Kx8Block>) {
        for (int j = 0; j < 32; ++j) {
          EXPECT_EQ(whole.qh[SpreadByte(lane, j)], block.qh[j]) << "fifth bits, byte " << j;
        }
      }
    }
  }
}

TEST(QuantMatmulRepacked, RepackedQ4KAndQ5KSuperBlocksHoldTheFilesBlocks) {
  std::mt19937 rng(11);
  CheckQ4KLikeSuperBlocks<BlockQ4_K, Q4Kx8Block>(WeightType::kQ4_K, rng);
  CheckQ4KLikeSuperBlocks<BlockQ5_K, Q5Kx8Block>(WeightType::kQ5_K, rng);
}

// Q6_K's repacked super-blocks hold the file's: every row's d and sixteen scales bit for bit,
// each weight's 6-bit value (read from the file's split by the float reference's
// dequantization) from its four low bits in `low` and two high bits in `high` where the paired
// order puts them (weight i of a sub-block: vector i % 16 / 4, dword i / 16 of qword `row`), and
// the bias as 128·Σ scale·(q − 32) over the row's super-block.
TEST(QuantMatmulRepacked, RepackedQ6KSuperBlocksHoldTheFilesBlocks) {
  std::mt19937 rng(13);
  const int64_t n = 16, blocks = 3, k = blocks * kSuperBlock;
  const QuantRows file = RandomRows(WeightType::kQ6_K, n, blocks, rng);
  const std::vector<char> packed = RepackRows(WeightType::kQ6_K, file.bytes.data(), n, k);
  ASSERT_EQ(packed.size(), static_cast<size_t>(n / 8 * blocks) * sizeof(Q6Kx8Block));
  const auto* groups = reinterpret_cast<const Q6Kx8Block*>(packed.data());
  const auto* rows = reinterpret_cast<const BlockQ6_K*>(file.bytes.data());
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t b = 0; b < blocks; ++b) {
      SCOPED_TRACE(::testing::Message() << "row " << row << " super-block " << b);
      const Q6Kx8Block& group = groups[(row / 8) * blocks + b];
      const BlockQ6_K& block = rows[row * blocks + b];
      const int lane = static_cast<int>(row % 8);
      EXPECT_EQ(group.d[lane], block.d);
      for (int g = 0; g < 16; ++g) EXPECT_EQ(group.scales[g][lane], block.scales[g]);
      const float d = base::HalfToFloat(block.d);
      int64_t bias = 0;
      for (int i = 0; i < kSuperBlock; ++i) {
        const int c = i / 32, j = i % 32;
        const int at = 64 * (j % 16 / 4) + 8 * lane + 4 * (j / 16) + j % 4;
        const int low = (group.low[c / 2][at] >> (4 * (c % 2))) & 15;
        const int high = (group.high[c / 4][at] >> (2 * (c % 4))) & 3;
        const int q = (low | high << 4) - 32;
        bias += 128 * block.scales[i / 16] * q;
        const float expected = file.w[row * k + b * kSuperBlock + i];
        EXPECT_EQ(d * static_cast<float>(block.scales[i / 16]) * static_cast<float>(q), expected)
            << "weight " << i;
      }
      EXPECT_EQ(group.bias[lane], bias);
    }
  }
}

// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K repacked in groups of rows (repacked_rows.h)
// against the same float64 twins and bounds as the file's kernels (the per-32 twin; the
// K-quants' per-256 one), the repacked weights being the file's, so the twin reads the original
// blocks; strided x and out, 1 to 256 rows, 1 to 18 blocks per row; and each row's result bit for
// bit the same alone and at any place in a batch of 2 to 37 rows, with and without threads (fresh
// random weights each run, seed printed).
TEST(QuantMatmulRepacked, MatchesTheTwinAndEveryRowIsItsOwn) {
  if (!CpuRunsRepacked()) {
    GTEST_SKIP() << "no AVX2: matrices are not repacked";
  }
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  ThreadPool pool(2);
  Worst worst;
  const auto repacked = [](const MatmulParams& p, ThreadPool* threads) {
    const std::vector<char> blocks = RepackRows(p.w_type, p.w, p.n, p.k);
    MatmulParams q = p;
    q.w = blocks.data();
    q.w_type = RepackedType(p.w_type);
    q.activation_quant = ActivationQuant::kQ8;
    MatmulRef(q, threads);
  };
  for (WeightType type :
       {WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ5_0, WeightType::kQ5_1,
        WeightType::kQ8_0, WeightType::kQ4_K, WeightType::kQ5_K, WeightType::kQ6_K}) {
    const bool per256 = IsRepackedKQuant(RepackedType(type));
    const int64_t block_values = per256 ? kSuperBlock : kQuantBlock;
    // Row counts on both sides of every pass shape (4, 8, two groups from 9, nibbles unpacked
    // from 32) and a prefill; 53 blocks are three spans of unpacked blocks.
    for (int64_t m : {1, 3, 4, 5, 8, 9, 11, 12, 16, 37, 256}) {
      for (int64_t n : {16, 48}) {
        for (int64_t blocks : {1, 3, 18, 53}) {
          if (m == 256 && blocks >= 18) continue;  // The float64 twin's time, not a new path.
          CheckQ8Case(type, m, n, blocks, block_values,
                      per256 ? QuantMatmulQ8KTwin : QuantMatmulQ8Twin, repacked, rng, pool, worst);
          if (HasFatalFailure()) return;
        }
      }
    }
    const int64_t n = 32, k = 5 * block_values;
    const std::vector<char> w = RepackRows(type, RandomRows(type, n, 5, rng).bytes.data(), n, k);
    const std::vector<float> row = RandomActivations(1, k, rng);
    std::vector<float> alone(n);
    MatmulRef({row.data(), w.data(), RepackedType(type), alone.data(), 1, n, k, k, n,
               ActivationQuant::kQ8},
              nullptr);
    for (int64_t m : {2, 4, 5, 8, 9, 16, 37}) {
      for (int64_t at : {int64_t{0}, m / 2, m - 1}) {
        std::vector<float> x = RandomActivations(m, k, rng);
        std::copy(row.begin(), row.end(), x.begin() + at * k);
        for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
          std::vector<float> out(m * n);
          MatmulRef({x.data(), w.data(), RepackedType(type), out.data(), m, n, k, k, n,
                     ActivationQuant::kQ8},
                    threads);
          ASSERT_EQ(std::memcmp(out.data() + at * n, alone.data(), n * sizeof(float)), 0)
              << "row " << at << " of " << m;
        }
      }
    }
  }
  PrintWorst("rows x8", worst);
}

// A K-quant prefill's rows are multiplied a block at a time (Q8KRowBlock: about 512 KiB of
// activations, here 64 of 300 rows at k = 8192, on AMX's tiles where the CPU has them): every row
// of every block, with threads, gives bit for bit what it gives alone, so a block's offsets into
// the activations and the output are right.
TEST(QuantMatmulRepacked, RowBlocksOfAPrefillChangeNoRow) {
  if (!CpuRunsRepacked()) {
    GTEST_SKIP() << "no AVX2: matrices are not repacked";
  }
  EXPECT_EQ(Q8KRowBlock(1, 2048), 16);
  EXPECT_EQ(Q8KRowBlock(2048, 2048), 256);
  EXPECT_EQ(Q8KRowBlock(2048, 8192), 64);
  EXPECT_EQ(Q8KRowBlock(300, 8192), 64);
  std::mt19937 rng(TestSeed());
  ThreadPool pool(2);
  const int64_t m = 300, n = 32, k = 8192;
  for (WeightType type : {WeightType::kQ4_K, WeightType::kQ5_K, WeightType::kQ6_K}) {
    const int64_t blocks = k / kSuperBlock;
    const std::vector<char> w =
        RepackRows(type, RandomRows(type, n, blocks, rng).bytes.data(), n, k);
    const std::vector<float> x = RandomActivations(m, k, rng);
    std::vector<float> out(m * n), alone(n);
    MatmulRef(
        {x.data(), w.data(), RepackedType(type), out.data(), m, n, k, k, n, ActivationQuant::kQ8},
        &pool);
    for (int64_t i = 0; i < m; ++i) {
      MatmulRef({x.data() + i * k, w.data(), RepackedType(type), alone.data(), 1, n, k, k, n,
                 ActivationQuant::kQ8},
                nullptr);
      ASSERT_EQ(std::memcmp(out.data() + i * n, alone.data(), n * sizeof(float)), 0)
          << "type " << static_cast<int>(type) << " row " << i << " of " << m;
    }
  }
}

// The repacked kernels of every instruction set this CPU runs (AVX2's maddubs, AVX-VNNI's and
// AVX-512's vpdpbusd; the 256-bit ones over two halves of each group; AMX's tiles for the
// K-quants) give the same bits, so a repacked model's numbers do not depend on the CPU it runs
// on, and the tiles may serve many rows in the batch-invariant numerics: 1 to 256 rows (every
// pass shape of each, and partial tiles), 16 to 48 weight rows (K-quants: an odd number of groups
// of eight, and ranges that start mid-pair), 1 to 18 blocks, strided x and out, fresh random
// weights each run (seed printed).
std::vector<Q8Isa> RepackedIsas() {
  std::vector<Q8Isa> isas;
  for (Q8Isa isa : {Q8Isa::kAvx2, Q8Isa::kAvxVnni, Q8Isa::kAvx512Vnni, Q8Isa::kAmx}) {
    if (CpuRunsQ8Isa(isa)) isas.push_back(isa);
  }
  return isas;
}

TEST(QuantMatmulRepacked, EveryInstructionSetGivesTheSameBits) {
  const std::vector<Q8Isa> isas = RepackedIsas();
  if (isas.size() < 2) GTEST_SKIP() << "one repacked kernel on this CPU: nothing to compare";
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  ThreadPool pool(2);
  for (WeightType type : {WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ5_0,
                          WeightType::kQ5_1, WeightType::kQ8_0}) {
    for (int64_t m : {1, 3, 4, 5, 8, 9, 11, 12, 16, 37, 256}) {
      for (int64_t n : {16, 48}) {
        for (int64_t blocks : {1, 3, 18, 53}) {
          if (m == 256 && blocks >= 18) continue;  // The AVX2 kernel's time, not a new path.
          SCOPED_TRACE(::testing::Message() << "type " << static_cast<int>(type) << " m " << m
                                            << " n " << n << " blocks " << blocks);
          const int64_t k = blocks * kQuantBlock, x_stride = k + 5, out_stride = n + 3;
          const std::vector<char> w =
              RepackRows(type, RandomRows(type, n, blocks, rng).bytes.data(), n, k);
          const std::vector<float> x = RandomActivations(m, x_stride, rng);
          std::vector<std::vector<float>> outs;
          for (Q8Isa isa : isas) {
            std::vector<float>& out = outs.emplace_back(m * out_stride, -1.0f);
            QuantMatmulQ8({.x = x.data(),
                           .w = w.data(),
                           .w_type = RepackedType(type),
                           .out = out.data(),
                           .m = m,
                           .n = n,
                           .k = k,
                           .x_stride = x_stride,
                           .out_stride = out_stride},
                          isa, &pool);
          }
          for (size_t i = 1; i < isas.size(); ++i) {
            ASSERT_EQ(std::memcmp(outs[i].data(), outs[0].data(), outs[0].size() * sizeof(float)),
                      0)
                << Q8IsaName(isas[i]) << " against " << Q8IsaName(isas[0]);
          }
        }
      }
    }
  }
}

// The same for the K-quants' repacked kernels, each called directly over two ranges.
TEST(QuantMatmulRepacked, EveryInstructionSetGivesTheSameKQuantBits) {
  const std::vector<Q8Isa> isas = RepackedIsas();
  if (isas.size() < 2) GTEST_SKIP() << "one repacked kernel on this CPU: nothing to compare";
  std::mt19937 rng(TestSeed());
  using KQuantRange = void (*)(const Q8KDotParams&, int64_t, int64_t);
  std::vector<KQuantRange> kquant;
  for (Q8Isa isa : isas) {
    kquant.push_back(isa == Q8Isa::kAvx2         ? avx2::RepackedKQuantDotRange
                     : isa == Q8Isa::kAvxVnni    ? avxvnni::RepackedKQuantDotRange
                     : isa == Q8Isa::kAvx512Vnni ? avx512vnni::RepackedKQuantDotRange
                                                 : amx::RepackedKQuantDotRange);
  }
  for (WeightType type : {WeightType::kQ4_K, WeightType::kQ5_K, WeightType::kQ6_K}) {
    for (int64_t m : {1, 3, 8, 9, 11, 12, 16, 37, 256}) {
      for (int64_t n : {16, 24, 48}) {
        for (int64_t blocks : {1, 3}) {
          SCOPED_TRACE(::testing::Message() << "type " << static_cast<int>(type) << " m " << m
                                            << " n " << n << " blocks " << blocks);
          const int64_t k = blocks * kSuperBlock, out_stride = n + 3;
          const std::vector<char> w =
              RepackRows(type, RandomRows(type, n, blocks, rng).bytes.data(), n, k);
          const std::vector<float> x = RandomActivations(m, k, rng);
          Q8KRowsStorage x8(m, blocks);
          for (int64_t i = 0; i < m; ++i) {
            QuantizeQ8KRow(x.data() + i * k, x8.rows[i]);
            PairBiasedQ8KRow(x8.rows[i]);
          }
          std::vector<std::vector<float>> outs;
          for (KQuantRange kernel : kquant) {
            std::vector<float>& out = outs.emplace_back(m * out_stride, -1.0f);
            // Two ranges, the second starting mid-pair where n allows, as threads split them.
            const Q8KDotParams params{w.data(), RepackedType(type), x8.rows.data(),
                                      m,        out.data(),         out_stride};
            const int64_t split = n == 48 ? 8 : n;
            kernel(params, 0, split);
            kernel(params, split, n);
          }
          for (size_t i = 1; i < isas.size(); ++i) {
            ASSERT_EQ(std::memcmp(outs[i].data(), outs[0].data(), outs[0].size() * sizeof(float)),
                      0)
                << Q8IsaName(isas[i]) << " against " << Q8IsaName(isas[0]);
          }
        }
      }
    }
  }
}

// MatmulGroupRef (Q, K and V; gate and up as one loop) gives every matrix exactly what its own
// MatmulRef gives, for groups that share a kernel path (one type; Q4_K beside Q6_K, as Q4_K_M
// files mix them) and groups that do not (a float matrix among quantized ones), in both
// activation modes, at several row counts, with and without a pool, widths that split unevenly.
// Fresh random weights each run (seed printed).
TEST(QuantMatmul, GroupedProjectionsEqualTheirOwnMatmuls) {
  const uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  ThreadPool pool(2);
  const int64_t k = 2 * kSuperBlock;
  const std::vector<std::vector<WeightType>> groups = {
      {WeightType::kQ4_1, WeightType::kQ4_1, WeightType::kQ4_1},
      {WeightType::kQ8_0, WeightType::kQ8_0},
      {WeightType::kQ4_K, WeightType::kQ4_K, WeightType::kQ6_K},
      {WeightType::kQ5_K, WeightType::kQ6_K, WeightType::kQ5_K},
      {WeightType::kQ5_0, WeightType::kF32, WeightType::kQ4_0}};
  const std::vector<int64_t> widths = {37, 9, 9};  // Uneven, as Q beside K and V.
  for (const std::vector<WeightType>& types : groups) {
    std::vector<std::vector<char>> weights;
    for (size_t g = 0; g < types.size(); ++g) {
      if (types[g] == WeightType::kF32) {
        const std::vector<float> f = RandomActivations(widths[g], k, rng);
        weights.emplace_back(reinterpret_cast<const char*>(f.data()),
                             reinterpret_cast<const char*>(f.data() + f.size()));
      } else {
        const int64_t blocks = k / model::Layout(FileDType(types[g])).block_elements;
        weights.push_back(RandomRows(types[g], widths[g], blocks, rng).bytes);
      }
    }
    for (ActivationQuant mode : {ActivationQuant::kF32, ActivationQuant::kQ8}) {
      for (int64_t m : {1, 3, 8, 13}) {
        for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
          SCOPED_TRACE(::testing::Message() << "first type " << static_cast<int>(types[0])
                                            << " mode " << static_cast<int>(mode) << " m " << m
                                            << (threads ? ", 2 threads" : ", 1 thread"));
          const std::vector<float> x = RandomActivations(m, k, rng);
          std::vector<std::vector<float>> grouped(types.size()), alone(types.size());
          std::vector<MatmulOutput> outputs;
          for (size_t g = 0; g < types.size(); ++g) {
            grouped[g].assign(m * widths[g], -1.0f);
            alone[g].assign(m * widths[g], -2.0f);
            outputs.push_back(
                {weights[g].data(), types[g], grouped[g].data(), widths[g], widths[g]});
            MatmulRef({x.data(), weights[g].data(), types[g], alone[g].data(), m, widths[g], k, k,
                       widths[g], mode},
                      threads);
          }
          MatmulParams shared;
          shared.x = x.data();
          shared.m = m;
          shared.k = k;
          shared.x_stride = k;
          shared.activation_quant = mode;
          MatmulGroupRef(shared, outputs, threads);
          for (size_t g = 0; g < types.size(); ++g) {
            ASSERT_EQ(
                std::memcmp(grouped[g].data(), alone[g].data(), grouped[g].size() * sizeof(float)),
                0)
                << "matrix " << g << ": " << grouped[g][0] << " vs " << alone[g][0];
          }
        }
      }
    }
  }
}

// Rows [0, m) in consecutive passes, as few as `width` allows, their sizes one apart at most.
TEST(RowPasses, CoverTheRowsInAsFewAndAsEvenPassesAsTheWidthAllows) {
  for (int64_t width : {1, 6, 8, 16}) {
    for (int64_t m = 1; m <= 70; ++m) {
      std::vector<std::pair<int64_t, int64_t>> passes;
      ForEachRowPass(m, width,
                     [&](int64_t first, int64_t rows) { passes.emplace_back(first, rows); });
      ASSERT_EQ(static_cast<int64_t>(passes.size()), (m + width - 1) / width)
          << m << " of " << width;
      int64_t next = 0, fewest = m, most = 0;
      for (const auto& [first, rows] : passes) {
        ASSERT_EQ(first, next);
        ASSERT_GE(rows, 1);
        ASSERT_LE(rows, width);
        next += rows;
        fewest = std::min(fewest, rows);
        most = std::max(most, rows);
      }
      EXPECT_EQ(next, m);
      EXPECT_LE(most - fewest, 1) << m << " rows in passes of up to " << width;
    }
  }
}

}  // namespace
}  // namespace arbor::kernels
