// The weights of one block of a sixteen-row repacked group (repacked_rows.h's Q4x16Block,
// Q5x16Block, Q8x16Block) as eight 64-byte vectors: vector u holds weights 4u … 4u + 3 of row l
// in lane l, as unsigned bytes. The AVX-512 kernel meets them with broadcast activations
// (quant_dot_avx512vnni.cc); the AMX kernel stores them as a B tile (repacked_amx.cc), whose
// rows have exactly this layout.
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
inline void LoadRows(const Q4x16Block& block, __m512i (&q)[8]) { LoadNibbles(block.qs, q); }
// The fifth bits: 16 added to each byte whose bit is set in the vector's mask.
inline void LoadRows(const Q5x16Block& block, __m512i (&q)[8]) {
  LoadNibbles(block.qs, q);
  const __m512i fifth = _mm512_set1_epi8(16);
  for (int u = 0; u < 8; ++u) {
    q[u] = _mm512_mask_add_epi8(q[u], _cvtu64_mask64(block.qh[u]), q[u], fifth);
  }
}
inline void LoadRows(const Q8x16Block& block, __m512i (&q)[8]) {
  for (int u = 0; u < 8; ++u) q[u] = _mm512_loadu_si512(block.qs + 64 * u);
}

}  // namespace arbor::kernels::ARBOR_QUANT_ISA_NS

#endif  // ARBOR_KERNELS_QUANT_REPACKED_ZMM_ROWS_H_
