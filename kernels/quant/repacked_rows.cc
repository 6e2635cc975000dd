#include "kernels/quant/repacked_rows.h"

#include <cstring>

#include "base/bf16.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_chunks.h"
#include "kernels/quant/quant_matmul.h"

namespace arbor::kernels {
namespace {

// m = factor·d, exact in half precision (the exponent moves by log2 |factor|).
uint16_t ScaledHalf(uint16_t d, float factor) {
  return base::FloatToHalf(factor * base::HalfToFloat(d));
}

// Row `lane` of a group's 4-bit (or 5-bit) block from the file's 16 nibble bytes. Group:
// Q4x16Block or Q5x16Block.
template <typename Group>
void PutNibbles(const uint8_t* qs, int lane, Group& group) {
  for (int t = 0; t < 4; ++t) std::memcpy(group.qs + 64 * t + 4 * lane, qs + 4 * t, 4);
}

// Row `lane` of a group's 5-bit block (Block: BlockQ5_0 or BlockQ5_1) with offset m: its scale,
// nibbles, and fifth bits (the file's little-endian word, bit j for weight j) into the group's
// masks, weight 4u + i at bit 4·lane + i of qh[u].
template <typename Block>
void PutFiveBits(const Block& block, uint16_t m, int lane, Q5x16Block& group) {
  group.d[lane] = block.d;
  group.m[lane] = m;
  PutNibbles(block.qs, lane, group);
  uint32_t bits;
  std::memcpy(&bits, block.qh, 4);
  for (int j = 0; j < 32; ++j) {
    group.qh[j / 4] |= uint64_t{(bits >> j) & 1} << (4 * lane + j % 4);
  }
}

// Row `lane` of a group's 8-bit block from the file's 32 signed bytes, as unsigned q + 128.
void PutBytes(const int8_t* qs, int lane, Q8x16Block& group) {
  for (int j = 0; j < 32; ++j) {
    group.qs[64 * (j / 4) + 4 * lane + j % 4] = static_cast<uint8_t>(qs[j] + 128);
  }
}

// Byte j (0–31) of row `lane` in a K-quant group's 256 bytes of 32 weights: vector j / 8, qword
// `lane`.
int SpreadByte(int lane, int j) { return 64 * (j / 8) + 8 * lane + j % 8; }

// Row `lane` of a group's Q4_K (or Q5_K's first four bits) super-block: its scales unpacked, its
// 128 nibble bytes (32 per pair of sub-blocks) spread over the quarters, eight bytes of the row
// per vector. Block: BlockQ4_K or BlockQ5_K.
template <typename Block>
void PutSuperBlock(const Block& block, int lane, Q4Kx8Block& group) {
  group.d[lane] = block.d;
  group.dmin[lane] = block.dmin;
  for (int j = 0; j < 8; ++j) {
    int scale = 0, min = 0;
    ScaleMinK4(j, block.scales, &scale, &min);
    group.scales[j][lane] = static_cast<uint8_t>(scale);
    group.mins[j][lane] = static_cast<uint8_t>(min);
  }
  for (int p = 0; p < 4; ++p) {
    for (int j = 0; j < 32; ++j) group.qs[p][SpreadByte(lane, j)] = block.qs[32 * p + j];
  }
}

// Row `lane` of a group's Q5_K super-block: Q4_K's fields, then the fifth bits spread alike.
void PutSuperBlock(const BlockQ5_K& block, int lane, Q5Kx8Block& group) {
  PutSuperBlock(block, lane, group.low);
  for (int j = 0; j < 32; ++j) group.qh[SpreadByte(lane, j)] = block.qh[j];
}

// Byte j (0–31) of row `lane`'s 32 weights in a repacked Q6_K sub-block, whose dword lanes pair
// the sub-block's two 16-weight groups: weights 4t … 4t + 3 and 16 + 4t … 16 + 4t + 3 in vector t.
int PairedByte(int lane, int j) {
  const int t = (j % 16) / 4;
  return 64 * t + 8 * lane + 4 * (j / 16) + j % 4;
}

// Row `lane` of a group's Q6_K super-block: each weight's 6 bits read from the file's split
// (quant_chunks.h's ChunkTraits<BlockQ6_K>), then split again as Q6Kx8Block keeps them.
void PutSuperBlock(const BlockQ6_K& block, int lane, Q6Kx8Block& group) {
  group.d[lane] = block.d;
  for (int g = 0; g < 16; ++g) group.scales[g][lane] = block.scales[g];
  int32_t bias = 0;
  for (int c = 0; c < 8; ++c) {  // Sub-block c: group r of half n.
    const int n = c / 4, r = c % 4;
    for (int j = 0; j < 32; ++j) {
      const uint8_t ql = block.ql[64 * n + 32 * (r & 1) + j];
      const int low = r >= 2 ? ql >> 4 : ql & 15, high = (block.qh[32 * n + j] >> (2 * r)) & 3;
      uint8_t& low_byte = group.low[c / 2][PairedByte(lane, j)];
      low_byte = static_cast<uint8_t>(low_byte | low << (4 * (c % 2)));
      uint8_t& high_byte = group.high[c / 4][PairedByte(lane, j)];
      high_byte = static_cast<uint8_t>(high_byte | high << (2 * (c % 4)));
      bias += 128 * block.scales[2 * c + j / 16] * ((low | high << 4) - 32);
    }
  }
  group.bias[lane] = bias;
}

// The rows of a group of type Group (the size of its `d`).
template <typename Group>
constexpr int kGroupRows = sizeof(Group::d) / sizeof(Group::d[0]);
template <>
constexpr int kGroupRows<Q5Kx8Block> = kGroupRows<Q4Kx8Block>;

// Bytes of n rows of `blocks` blocks each as groups of type Group.
template <typename Group>
int64_t GroupBytes(int64_t n, int64_t blocks) {
  return (n / kGroupRows<Group>)*blocks * static_cast<int64_t>(sizeof(Group));
}

// Fills the groups at `bytes` (GroupBytes of them, zeroed) row by row and block by block.
template <typename Group, typename Fill>
void Repack(int64_t n, int64_t blocks, void* bytes, const Fill& fill) {
  constexpr int kRows = kGroupRows<Group>;
  Group* out = static_cast<Group*>(bytes);
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t b = 0; b < blocks; ++b) {
      fill(row * blocks + b, static_cast<int>(row % kRows), out[(row / kRows) * blocks + b]);
    }
  }
}

}  // namespace

WeightType RepackedType(WeightType type) {
  switch (type) {
    case WeightType::kQ4_0:
    case WeightType::kQ4_1:
      return WeightType::kQ4x16;
    case WeightType::kQ5_0:
    case WeightType::kQ5_1:
      return WeightType::kQ5x16;
    case WeightType::kQ8_0:
      return WeightType::kQ8x16;
    case WeightType::kQ4_K:
      return WeightType::kQ4Kx8;
    case WeightType::kQ5_K:
      return WeightType::kQ5Kx8;
    case WeightType::kQ6_K:
      return WeightType::kQ6Kx8;
    default:
      return WeightType::kF32;
  }
}

bool Repackable(WeightType type, int64_t n, int64_t k) {
  const WeightType repacked = RepackedType(type);
  return repacked != WeightType::kF32 && n > 0 && n % RowsPerUnit(repacked) == 0 && k > 0 &&
         k % model::Layout(FileDType(type)).block_elements == 0;
}

int64_t RepackedBytes(WeightType type, int64_t n, int64_t k) {
  switch (RepackedType(type)) {
    case WeightType::kQ4Kx8:
      return GroupBytes<Q4Kx8Block>(n, k / kSuperBlock);
    case WeightType::kQ5Kx8:
      return GroupBytes<Q5Kx8Block>(n, k / kSuperBlock);
    case WeightType::kQ6Kx8:
      return GroupBytes<Q6Kx8Block>(n, k / kSuperBlock);
    case WeightType::kQ4x16:
      return GroupBytes<Q4x16Block>(n, k / kQuantBlock);
    case WeightType::kQ5x16:
      return GroupBytes<Q5x16Block>(n, k / kQuantBlock);
    default:  // kQ8x16.
      return GroupBytes<Q8x16Block>(n, k / kQuantBlock);
  }
}

std::vector<char> RepackRows(WeightType type, const void* rows, int64_t n, int64_t k) {
  std::vector<char> bytes(RepackedBytes(type, n, k));
  RepackRowsInto(type, rows, n, k, bytes.data());
  return bytes;
}

void RepackRowsInto(WeightType type, const void* rows, int64_t n, int64_t k, void* out) {
  const int64_t blocks = k / kQuantBlock;
  switch (type) {
    case WeightType::kQ4_K:
      return Repack<Q4Kx8Block>(
          n, k / kSuperBlock, out, [rows](int64_t i, int lane, Q4Kx8Block& group) {
            PutSuperBlock(static_cast<const BlockQ4_K*>(rows)[i], lane, group);
          });
    case WeightType::kQ5_K:
      return Repack<Q5Kx8Block>(
          n, k / kSuperBlock, out, [rows](int64_t i, int lane, Q5Kx8Block& group) {
            PutSuperBlock(static_cast<const BlockQ5_K*>(rows)[i], lane, group);
          });
    case WeightType::kQ6_K:
      return Repack<Q6Kx8Block>(
          n, k / kSuperBlock, out, [rows](int64_t i, int lane, Q6Kx8Block& group) {
            PutSuperBlock(static_cast<const BlockQ6_K*>(rows)[i], lane, group);
          });
    case WeightType::kQ4_1:
      return Repack<Q4x16Block>(n, blocks, out, [rows](int64_t i, int lane, Q4x16Block& group) {
        const BlockQ4_1& block = static_cast<const BlockQ4_1*>(rows)[i];
        group.d[lane] = block.d;
        group.m[lane] = block.m;
        PutNibbles(block.qs, lane, group);
      });
    case WeightType::kQ4_0:
      return Repack<Q4x16Block>(n, blocks, out, [rows](int64_t i, int lane, Q4x16Block& group) {
        const BlockQ4_0& block = static_cast<const BlockQ4_0*>(rows)[i];
        group.d[lane] = block.d;
        group.m[lane] = ScaledHalf(block.d, -8.0f);
        PutNibbles(block.qs, lane, group);
      });
    case WeightType::kQ5_1:
      return Repack<Q5x16Block>(n, blocks, out, [rows](int64_t i, int lane, Q5x16Block& group) {
        const BlockQ5_1& block = static_cast<const BlockQ5_1*>(rows)[i];
        PutFiveBits(block, block.m, lane, group);
      });
    case WeightType::kQ5_0:
      return Repack<Q5x16Block>(n, blocks, out, [rows](int64_t i, int lane, Q5x16Block& group) {
        const BlockQ5_0& block = static_cast<const BlockQ5_0*>(rows)[i];
        PutFiveBits(block, ScaledHalf(block.d, -16.0f), lane, group);
      });
    default:  // kQ8_0.
      return Repack<Q8x16Block>(n, blocks, out, [rows](int64_t i, int lane, Q8x16Block& group) {
        const BlockQ8_0& block = static_cast<const BlockQ8_0*>(rows)[i];
        group.d[lane] = block.d;
        PutBytes(block.qs, lane, group);
      });
  }
}

bool CpuRunsRepacked() { return BestQ8Isa().has_value(); }

}  // namespace arbor::kernels
