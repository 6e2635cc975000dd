// The weights of repacked groups as 64-byte vectors. One block of a sixteen-row group
// (repacked_rows.h's Q4x16Block, Q5x16Block, Q8x16Block) is eight vectors: vector u holds weights
// 4u … 4u + 3 of row l in lane l, as unsigned bytes, which the AVX-512 kernel meets with
// broadcast activations (quant_dot_avx512vnni.cc). A Q6_K super-block's six-bit weights are
// rebuilt from their two fields (Q6KWeights) by both K-quant kernels
// (repacked_kquant_avx512vnni.cc, repacked_kquant_amx.cc).
//
// Compiled into translation units with different instruction sets: each includer names its own
// namespace in ARBOR_QUANT_ISA_NS (see quant_chunk_bytes.h).
#ifndef ARBOR_QUANT_ISA_NS
#error "define ARBOR_QUANT_ISA_NS (the including file's instruction-set namespace) first"
#endif
#ifndef ARBOR_KERNELS_QUANT_REPACKED_ZMM_ROWS_H_
#define ARBOR_KERNELS_QUANT_REPACKED_ZMM_ROWS_H_

#include <immintrin.h>

#include <cstdint>

#include "kernels/quant/repacked_rows.h"

namespace arbor::kernels::ARBOR_QUANT_ISA_NS {

// The nibbles of four vectors of bytes: low ones to q[0 … 3], high ones to q[4 … 7].
inline void LoadNibbles(const uint8_t* qs, __m512i (&q)[8]) {
  const __m512i low = _mm512_set1_epi8(0x0f);
  for (int t = 0; t < 4; ++t) {
    const __m512i bytes = _mm512_loadu_si512(qs + 64 * t);
    q[t] = _mm512_and_si512(bytes, low);
    q[4 + t] = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low);
  }
}

// Vectors t and t + 4 of a sixteen-row group's block (weights 4t … 4t + 3 and 4t + 16 … 4t + 19 of
// each row), as unsigned bytes: the low and high nibbles of the same 64 bytes, or two loads.
inline void RowVectors(const Q4x16Block& block, int t, __m512i& low, __m512i& high) {
  const __m512i bytes = _mm512_loadu_si512(block.qs + 64 * t);
  low = _mm512_and_si512(bytes, _mm512_set1_epi8(0x0f));
  high = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), _mm512_set1_epi8(0x0f));
}
// The fifth bits: 16 added to each byte whose bit is set in the vector's mask.
inline void RowVectors(const Q5x16Block& block, int t, __m512i& low, __m512i& high) {
  const __m512i bytes = _mm512_loadu_si512(block.qs + 64 * t);
  const __m512i nibble = _mm512_set1_epi8(0x0f), fifth = _mm512_set1_epi8(16);
  low = _mm512_and_si512(bytes, nibble);
  high = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), nibble);
  low = _mm512_mask_add_epi8(low, _cvtu64_mask64(block.qh[t]), low, fifth);
  high = _mm512_mask_add_epi8(high, _cvtu64_mask64(block.qh[t + 4]), high, fifth);
}
// Q4x16Block's vectors t and t + 4 with the high nibbles left in place: 16 times vector t + 4.
inline void RowVectorsHighBySixteen(const Q4x16Block& block, int t, __m512i& low, __m512i& high) {
  const __m512i bytes = _mm512_loadu_si512(block.qs + 64 * t);
  low = _mm512_and_si512(bytes, _mm512_set1_epi8(0x0f));
  high = _mm512_and_si512(bytes, _mm512_set1_epi8(static_cast<char>(0xf0)));
}
inline void RowVectors(const Q8x16Block& block, int t, __m512i& low, __m512i& high) {
  low = _mm512_loadu_si512(block.qs + 64 * t);
  high = _mm512_loadu_si512(block.qs + 64 * (t + 4));
}

// Sub-block j's q (0 … 63) of an eight-row Q6_K group, vector t: row r's weights 4t … 4t + 3 of
// group 2j in dword 2r and of group 2j + 1 in dword 2r + 1, from the low four bits in `low` and
// the top two (bits 2f, 2f + 1 of `high`'s bytes, f = j % 4) placed at bits 4 and 5.
inline __m512i Q6KWeights(const Q6Kx8Block& block, int j, int t) {
  const __m512i l = _mm512_loadu_si512(block.low[j / 2] + 64 * t);
  const __m512i h = _mm512_loadu_si512(block.high[j / 4] + 64 * t);
  const __m512i bits03 =
      _mm512_and_si512(j % 2 ? _mm512_srli_epi16(l, 4) : l, _mm512_set1_epi8(0x0f));
  const int f = j % 4;
  const __m512i placed = f == 0   ? _mm512_slli_epi16(h, 4)
                         : f == 1 ? _mm512_slli_epi16(h, 2)
                         : f == 2 ? h
                                  : _mm512_srli_epi16(h, 2);
  // (placed & 0x30) | bits03.
  return _mm512_ternarylogic_epi32(placed, _mm512_set1_epi8(0x30), bits03, 0xEA);
}

}  // namespace arbor::kernels::ARBOR_QUANT_ISA_NS

#endif  // ARBOR_KERNELS_QUANT_REPACKED_ZMM_ROWS_H_
