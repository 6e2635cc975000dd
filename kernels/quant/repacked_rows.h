// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K matrices repacked for passes over several
// weight rows at a time (WeightType::kQ4x16, kQ5x16, kQ8x16: sixteen rows; kQ4Kx8, kQ5Kx8,
// kQ6Kx8: eight): per group of rows and per block, the rows' scales, offsets and weight bytes
// side by side, so that one vpdpbusd multiplies every row of the group by the same activations,
// broadcast from memory. The file's blocks (18 to 34 bytes each) make the per-32 kernel of
// quant_dot_kernel.h convert each row's scale alone and convert, scale and accumulate each row's
// integer sum alone; here that float work is one vector op for sixteen rows. The layouts are
// AVX-512's (64-byte vectors); CPUs without it read each vector as two 32-byte halves
// (repacked_ymm_kernel.h, repacked_kquant_ymm_kernel.h) and get the same bits. Made at load by the
// CPU backend (`--activation_quant=q8`, any CPU with AVX2); the numbers are the file's kernels' up
// to fp32 rounding order (the float64 twins bound both), and each row's result is the same
// whatever rows share the call.
//
// Every per-32 format is w = d·q + m over unsigned bytes q: Q4_1 and Q5_1 as stored, Q4_0 with
// m = −8·d and Q5_0 with m = −16·d (their zero points, exact in half precision), the offset
// applied as m·d_x·Σq_x; Q8_0 as q + 128 with m = −128·d, applied in integers (Q8x16Block).
#ifndef ARBOR_KERNELS_QUANT_REPACKED_ROWS_H_
#define ARBOR_KERNELS_QUANT_REPACKED_ROWS_H_

#include <cstdint>
#include <vector>

#include "kernels/weight_type.h"

namespace arbor::kernels {

// Sixteen rows' block b of 4-bit weights: lane l of 64-byte vector t of `qs` holds the file's
// nibble bytes 4t … 4t + 3 of row l, whose low nibbles are weights 4t … 4t + 3 and high nibbles
// weights 16 + 4t … +3 (the file's order: byte i holds weights i and i + 16).
struct Q4x16Block {
  uint16_t d[16];  // Half-precision scales of the sixteen rows.
  uint16_t m[16];  // Half-precision offsets.
  uint8_t qs[256];
};
static_assert(sizeof(Q4x16Block) == 320, "four 64-byte vectors after 64 bytes of scales");

// Sixteen rows' block b of 5-bit weights (Q5_0 with m = −16·d, exact in half precision; Q5_1 as
// stored): Q4x16Block's scales, offsets and nibbles, and the fifth bits as eight 64-bit masks,
// bit 4l + i of qh[u] the fifth bit of weight 4u + i of row l: the weight that byte i of lane l
// holds once the nibbles are unpacked into eight vectors (u < 4: low nibbles of vector u of `qs`;
// u ≥ 4: high nibbles of vector u − 4). The file's bytes, rearranged.
struct Q5x16Block {
  uint16_t d[16];
  uint16_t m[16];
  uint64_t qh[8];
  uint8_t qs[256];
};
static_assert(sizeof(Q5x16Block) == 16 * 24, "the file's bytes, rearranged");

// Sixteen rows' block b of 8-bit weights (Q8_0's, plus 128, w = d·(q − 128)): lane l of vector t
// of `qs` holds weights 4t … 4t + 3 of row l. The offset needs no field: the kernel takes −128·Σq
// of the activations in integers.
struct Q8x16Block {
  uint16_t d[16];
  uint8_t qs[512];
};
static_assert(sizeof(Q8x16Block) == 544, "eight 64-byte vectors after 32 bytes of scales");

// Eight rows' super-block b of Q4_K (256 weights each: eight 32-weight sub-blocks, each with a
// 6-bit scale and minimum, w = d·scale·q − dmin·minimum). The scales and minimums are unpacked
// to bytes at load, sub-block-major, so that one load gives a sub-block's eight rows; `qs`
// holds the file's nibble bytes of sub-blocks 2p and 2p+1 (low and high nibbles) in quarter p,
// whose 64-byte vector t holds bytes 8t … 8t + 7 of row r in its qword r: one broadcast of eight
// activation bytes meets all eight rows. Per-256 activations (q8k_activations.h) meet it: each
// sub-block's integer sums for eight rows are scaled in integers, then converted once per
// super-block.
struct Q4Kx8Block {
  uint16_t d[8];         // Half-precision scales of the eight rows.
  uint16_t dmin[8];      // Half-precision scales of their minimums.
  uint8_t scales[8][8];  // [sub-block][row].
  uint8_t mins[8][8];    // [sub-block][row].
  uint8_t qs[4][256];
};
static_assert(sizeof(Q4Kx8Block) == 1184, "160 bytes of scales, then four 256-byte quarters");

// Eight rows' super-block b of Q5_K (Q4_K with a fifth bit per weight, q of 0–31): Q4_K's fields
// as Q4Kx8Block holds them, and `qh`, the file's 32 bytes of fifth bits of each row spread as a
// quarter of `qs` spreads its bytes (vector t, qword r: bytes 8t … 8t + 7 of row r), bit j of
// byte i the fifth bit of weight i of sub-block j.
struct Q5Kx8Block {
  Q4Kx8Block low;
  uint8_t qh[256];
};
static_assert(sizeof(Q5Kx8Block) == 1440, "Q4_K's group, then the fifth bits");

// Eight rows' super-block b of Q6_K (256 weights each: w = d·scale·(q − 32), q of 6 bits, a
// signed 8-bit scale per 16 weights). Each weight's 6 bits are split as the file splits them:
// `low` holds the low four bits of sub-blocks 2p and 2p+1 (low and high nibbles) in quarter p,
// `high` the top two bits of sub-blocks 4h … 4h + 3 (bits 2f, 2f + 1 for sub-block 4h + f) in
// half h. Within a 32-weight sub-block, vector t holds row r's weights 4t … 4t + 3 and 16 + 4t …
// 16 + 4t + 3 in qword r: the two dword lanes of a row belong to its two 16-weight groups, so one
// integer multiply applies both groups' scales. The kernel multiplies q − 32 (signed) by
// activations + 128 (unsigned, q8k_activations.h's `biased_pairs`, in the same order); `bias`
// takes back what the +128 adds, so no activation sums are needed. The file's 1,680 bytes and 32.
struct Q6Kx8Block {
  uint16_t d[8];         // Half-precision scales of the eight rows.
  int8_t scales[16][8];  // [16-weight group][row].
  int32_t bias[8];       // Per row: 128·Σ scale·Σ (q − 32) over the sixteen groups.
  uint8_t low[4][256];
  uint8_t high[2][256];
};
static_assert(sizeof(Q6Kx8Block) == 8 * 210 + 32, "the file's bytes, rearranged, and the biases");

// Whether `type` is a repacked K-quant (kQ4Kx8, kQ5Kx8, kQ6Kx8: per-256 activations).
inline bool IsRepackedKQuant(WeightType type) {
  return type == WeightType::kQ4Kx8 || type == WeightType::kQ5Kx8 || type == WeightType::kQ6Kx8;
}
// Whether `type` is a repacked one (kQ4x16, kQ5x16, kQ8x16, kQ4Kx8, kQ5Kx8, kQ6Kx8).
inline bool IsRepacked(WeightType type) {
  return type == WeightType::kQ4x16 || type == WeightType::kQ5x16 || type == WeightType::kQ8x16 ||
         IsRepackedKQuant(type);
}
// Output rows per unit of a grouped loop over matrices: a repacked matrix's group, else one.
inline int64_t RowsPerUnit(WeightType type) {
  if (IsRepackedKQuant(type)) return 8;
  return IsRepacked(type) ? 16 : 1;
}
// From this many activation rows the sixteen-row kernels pass over two groups at a time
// (quant_dot_avx512vnni.cc).
constexpr int64_t kTwoGroupsFromRows = 9;
// RowsPerUnit for a matrix of n rows met by m activation rows: two sixteen-row groups where
// the kernel passes over two (n a multiple of 32), so that no thread's range leaves a group to
// the slower one-group pass.
inline int64_t RowsPerUnit(WeightType type, int64_t m, int64_t n) {
  const int64_t rows = RowsPerUnit(type);
  return rows == 16 && m >= kTwoGroupsFromRows && n % 32 == 0 ? 32 : rows;
}
// The repacked type of `type` (Q4_0, Q4_1 → kQ4x16; Q5_0, Q5_1 → kQ5x16; Q8_0 → kQ8x16; Q4_K →
// kQ4Kx8; Q5_K → kQ5Kx8; Q6_K → kQ6Kx8), or kF32 for none.
WeightType RepackedType(WeightType type);
// Whether `n` rows of `k` weights of `type` can be repacked (a type above, n a multiple of its
// group's rows, k of its block).
bool Repackable(WeightType type, int64_t n, int64_t k);
// Bytes of `n` rows of `k` weights of `type` once repacked (Repackable ones).
int64_t RepackedBytes(WeightType type, int64_t n, int64_t k);
// Writes the groups of k / 32 blocks (K-quants: k / 256 super-blocks) each, group-major, of
// RepackedType(type) into `out`: RepackedBytes(type, n, k) bytes, zeroed before.
void RepackRowsInto(WeightType type, const void* rows, int64_t n, int64_t k, void* out);
// The same into a vector of its own.
std::vector<char> RepackRows(WeightType type, const void* rows, int64_t n, int64_t k);
// Whether this CPU runs the repacked kernels: any with AVX2 (the 8-bit kernels' BestQ8Isa).
bool CpuRunsRepacked();

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_REPACKED_ROWS_H_
