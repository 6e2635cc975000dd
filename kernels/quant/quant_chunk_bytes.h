// AVX2 loaders of one 32-weight chunk (quant_chunks.h) of every block-quantized type as 32 bytes
// in a register, with its scale and offset per 16-weight half: w_j = s[j / 16]·q_j + o[j / 16].
// Both quantized matmuls read blocks through these: the fp32 path widens the bytes to floats
// (quant_matmul.cc), the 8-bit-activation path feeds them to integer dot products
// (quant_dot_kernel.h). The bytes are unsigned (0..63) for every type but Q8_0 (signed);
// Q4_0, Q5_0 and Q6_K keep their zero point in the offset (o = −8·s, −16·s, −32·s), which the
// integer path applies exactly as an integer sum of the activations.
//
// The file is compiled into translation units with different instruction sets (AVX2 only,
// AVX-VNNI, AVX-512): an inline function with external linkage would be emitted in each and the
// linker would keep one arbitrary copy, possibly the AVX-512 one on an AVX2-only CPU. So every
// includer names its own namespace in ARBOR_QUANT_ISA_NS, which keeps the copies apart.
#ifndef ARBOR_QUANT_ISA_NS
#error "define ARBOR_QUANT_ISA_NS (the including file's instruction-set namespace) first"
#endif
#ifndef ARBOR_KERNELS_QUANT_QUANT_CHUNK_BYTES_H_
#define ARBOR_KERNELS_QUANT_QUANT_CHUNK_BYTES_H_

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_chunks.h"

namespace arbor::kernels::ARBOR_QUANT_ISA_NS {

// A chunk's 32 integers and the affine map of each half.
struct ByteChunk {
  __m256i q;
  float s[2];
  float o[2];
};

// Q8_0's integers are signed bytes; every other type's are unsigned.
template <typename Block>
inline constexpr bool kSignedBytes = std::is_same_v<Block, BlockQ8_0>;
// Q6_K's scales differ between the halves of a chunk; every other type has one per chunk.
template <typename Block>
inline constexpr bool kSplitScales = std::is_same_v<Block, BlockQ6_K>;

// Chunks per block: 1 for the 32-weight types, 8 for the K-quants' 256-weight super-blocks.
template <typename Block>
inline constexpr int kChunksPerBlock = sizeof(Block) > 64 ? kSuperBlock / kQuantBlock : 1;

// IEEE half to float with F16C (every AVX2 CPU has it); not base::HalfToFloat, see above.
inline float Half(uint16_t h) { return _cvtsh_ss(h); }

// 16 bytes of nibbles: weights 0..15 in the low nibbles, 16..31 in the high ones.
inline __m256i Nibbles16(const uint8_t* qs) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i mask = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), mask),
                          _mm_and_si128(packed, mask));
}

// 32 bytes of nibbles: the low (or high) nibble of each.
inline __m256i Nibbles32(const uint8_t* qs, bool high) {
  const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
  return _mm256_and_si256(high ? _mm256_srli_epi16(packed, 4) : packed, _mm256_set1_epi8(0x0f));
}

// Bits `shift`, `shift`+1 (under `mask`) of 32 bytes, moved to bit 4 (and 5).
inline __m256i HighBits(const uint8_t* qh, int shift, int mask) {
  const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
  const __m256i bits =
      _mm256_and_si256(_mm256_srl_epi16(packed, _mm_cvtsi32_si128(shift)), _mm256_set1_epi8(mask));
  return _mm256_slli_epi16(bits, 4);  // ≤ 0x30 per byte: no carry into the next byte.
}

// Q5_0 / Q5_1: 32 fifth bits (bit j of the little-endian word for weight j) as 0 or 16 per byte,
// added to the nibbles. Byte j of the broadcast word picks byte j / 8 of qh; one bit of each
// survives the mask, and the compare turns it into a whole byte.
inline __m256i FifthBits(const uint8_t* qh) {
  uint32_t word;
  std::memcpy(&word, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(word)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(16));
}

inline void SetAffine(ByteChunk& w, float s, float o) {
  w.s[0] = w.s[1] = s;
  w.o[0] = w.o[1] = o;
}

inline void LoadChunk(const BlockQ8_0& b, int, ByteChunk& w) {
  w.q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
  SetAffine(w, Half(b.d), 0.0f);
}
inline void LoadChunk(const BlockQ4_0& b, int, ByteChunk& w) {
  w.q = Nibbles16(b.qs);
  const float d = Half(b.d);
  SetAffine(w, d, -8.0f * d);
}
// Q4_1 / Q5_1: the scale and minimum, adjacent halves, converted by one instruction.
template <typename Block>
inline void SetAffineDm(const Block& b, ByteChunk& w) {
  static_assert(offsetof(Block, m) == offsetof(Block, d) + 2);
  uint32_t dm;
  std::memcpy(&dm, &b.d, 4);
  const __m128 both = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(dm)));
  SetAffine(w, _mm_cvtss_f32(both), _mm_cvtss_f32(_mm_movehdup_ps(both)));
}
inline void LoadChunk(const BlockQ4_1& b, int, ByteChunk& w) {
  w.q = Nibbles16(b.qs);
  SetAffineDm(b, w);
}
inline void LoadChunk(const BlockQ5_0& b, int, ByteChunk& w) {
  w.q = _mm256_or_si256(Nibbles16(b.qs), FifthBits(b.qh));
  const float d = Half(b.d);
  SetAffine(w, d, -16.0f * d);
}
inline void LoadChunk(const BlockQ5_1& b, int, ByteChunk& w) {
  w.q = _mm256_or_si256(Nibbles16(b.qs), FifthBits(b.qh));
  SetAffineDm(b, w);
}
// Q4_K / Q5_K sub-block c: scale d·sc, offset −dmin·m. ScaleMinK4 is plain integer code, the same
// in every instruction set, so sharing its one copy is safe.
template <typename Block>
inline void AffineK(const Block& b, int c, ByteChunk& w) {
  int scale = 0, min = 0;
  ScaleMinK4(c, b.scales, &scale, &min);
  SetAffine(w, Half(b.d) * static_cast<float>(scale), -(Half(b.dmin) * static_cast<float>(min)));
}
inline void LoadChunk(const BlockQ4_K& b, int c, ByteChunk& w) {
  w.q = Nibbles32(b.qs + kQuantBlock * (c / 2), c & 1);
  AffineK(b, c, w);
}
inline void LoadChunk(const BlockQ5_K& b, int c, ByteChunk& w) {
  const __m256i low = Nibbles32(b.qs + kQuantBlock * (c / 2), c & 1);
  w.q = _mm256_or_si256(low, HighBits(b.qh, c, 1));
  AffineK(b, c, w);
}
// Chunk c is group r = c % 4 of half n = c / 4 (see ChunkTraits<BlockQ6_K>).
inline void LoadChunk(const BlockQ6_K& b, int c, ByteChunk& w) {
  const int n = c / 4, r = c % 4;
  const __m256i low = Nibbles32(b.ql + 64 * n + 32 * (r & 1), r >= 2);
  w.q = _mm256_or_si256(low, HighBits(b.qh + 32 * n, 2 * r, 3));
  const float d = Half(b.d);
  for (int h = 0; h < 2; ++h) {
    w.s[h] = d * static_cast<float>(b.scales[8 * n + 2 * r + h]);
    w.o[h] = -32.0f * w.s[h];
  }
}

}  // namespace arbor::kernels::ARBOR_QUANT_ISA_NS

#endif  // ARBOR_KERNELS_QUANT_QUANT_CHUNK_BYTES_H_
