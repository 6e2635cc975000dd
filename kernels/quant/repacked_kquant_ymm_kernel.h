// The 256-bit kernel of Q4_K, Q5_K and Q6_K rows repacked eight at a time (WeightType::kQ4Kx8,
// kQ5Kx8, kQ6Kx8, repacked_rows.h), for CPUs without AVX-512: written once and compiled by
// quant_dot_avx2.cc (maddubs and madd) and quant_dot_avxvnni.cc (vpdpbusd and vpdpwssd on ymm)
// inside their own namespaces (ARBOR_QUANT_ISA_NS; see quant_chunk_bytes.h for why). The layout
// is the AVX-512 kernel's (repacked_kquant_avx512vnni.cc), read as two 32-byte halves of four rows
// each. Every lane ends with the same exact integers as there and then takes the same float
// operations in the same order, so a row's result is the same bits on any of the three kernels,
// and independent of its batch.
#ifndef ARBOR_QUANT_ISA_NS
#error "define ARBOR_QUANT_ISA_NS first"
#endif
#ifndef ARBOR_KERNELS_QUANT_REPACKED_KQUANT_YMM_KERNEL_H_
#define ARBOR_KERNELS_QUANT_REPACKED_KQUANT_YMM_KERNEL_H_

#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/quant/quant_dot.h"
#include "kernels/quant/repacked_kquant_range.h"
#include "kernels/quant/repacked_prefetch.h"
#include "kernels/quant/repacked_rows.h"

namespace arbor::kernels::ARBOR_QUANT_ISA_NS::kquant {

// Activation rows per pass over a group's super-block. With maddubs, six rows' sums, a sub-block's
// four weight vectors and the broadcasts fit the sixteen ymm registers, where eight spilled a
// row's sum and the nibble mask to the stack (six against eight on a Zen 3: Q4_K 1.13× and Q6_K
// 1.11× at 256 rows, level at 8 and 32). The vpdpbusd kernel keeps eight, as measured when it was
// written (no AVX-VNNI CPU has raced six).
template <bool kVnni>
constexpr int kRows = kVnni ? 8 : 6;

inline __m256i Load(const uint8_t* at) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
}
inline __m128 Halves4(const uint16_t* h) {
  int64_t four;
  std::memcpy(&four, h, 8);
  return _mm_cvtph_ps(_mm_cvtsi64_si128(four));
}
// Eight bytes to every qword, as a load (vbroadcastsd; see repacked_ymm_kernel.h's Broadcast4).
inline __m256i Broadcast8(const void* at) {
  return _mm256_castpd_si256(_mm256_broadcast_sd(static_cast<const double*>(at)));
}
// Sixteen bytes to both lanes, as a load (vbroadcasti128).
inline __m256i Broadcast16(const void* at) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(static_cast<const __m128i*>(at)));
}
// Sub-block j's 32 activation bytes of one row at xj: bytes 8t … 8t + 7 in every qword of x[t],
// as each meets four weight rows.
inline void Activations(const void* xj, __m256i (&x)[4]) {
  for (int t = 0; t < 4; ++t) x[t] = Broadcast8(static_cast<const char*>(xj) + 8 * t);
}
// `v` as it is here, so GCC keeps a row's chain of integer adds a chain (repacked_ymm_kernel.h).
[[gnu::always_inline]] inline void Settle(__m256i& v) { asm("" : "+x"(v)); }

// Where GCC must load memory anew: a sub-block's vectors come from the cache again rather than
// from registers kept across sub-blocks, which spilled (a load costs less than a spill's store).
[[gnu::always_inline]] inline void ReloadHere() { asm volatile("" ::: "memory"); }

// A vpshufb index that spreads per-row bytes (arrays of eight rows, two such arrays in a 16-byte
// lane) as the 16-bit words that madd and vpdpwssd meet: qword r of the result holds row 4h + r,
// its word w byte from[w] + 4h + r of the lane (from[w] < 0: zero), in the word's low byte (zero-
// extended as it stands) or in its high byte (sign-extended by a shift). One shuffle of a
// broadcast load where the bytes were moved one row at a time (two loads, an unpack, a shuffle
// and a widening each).
struct SpreadIndex {
  alignas(32) int8_t bytes[32];
  bool sign_extend;
};
constexpr SpreadIndex MakeSpreadIndex(int h, int w0, int w1, int w2, int w3, bool high_byte) {
  SpreadIndex index{.bytes = {}, .sign_extend = high_byte};
  const int from[4] = {w0, w1, w2, w3};
  for (int r = 0; r < 4; ++r) {
    for (int w = 0; w < 4; ++w) {
      const int8_t source = from[w] < 0 ? -128 : static_cast<int8_t>(from[w] + 4 * h + r);
      index.bytes[8 * r + 2 * w] = high_byte ? -128 : source;
      index.bytes[8 * r + 2 * w + 1] = high_byte ? source : -128;
    }
  }
  return index;
}
// By half: a row's scale s as words (s, s, s, s), for madd against its sub-block's pairs …
inline constexpr SpreadIndex kScaleWords[2] = {MakeSpreadIndex(0, 0, 0, 0, 0, false),
                                               MakeSpreadIndex(1, 0, 0, 0, 0, false)};
// … or (s, 0, s, 0), for vpdpwssd against dword lanes whose sums fit in 16 bits (it multiplies
// a lane's sum, its low word, by s and its high word by 0).
inline constexpr SpreadIndex kScaleDwords[2] = {MakeSpreadIndex(0, 0, -1, 0, -1, false),
                                                MakeSpreadIndex(1, 0, -1, 0, -1, false)};
// Bytes a and b of two consecutive eight-row arrays as words (a, a, b, b), unsigned …
inline constexpr SpreadIndex kPairWords[2] = {MakeSpreadIndex(0, 0, 0, 8, 8, false),
                                              MakeSpreadIndex(1, 0, 0, 8, 8, false)};
// … and signed.
inline constexpr SpreadIndex kSignedPairWords[2] = {MakeSpreadIndex(0, 0, 0, 8, 8, true),
                                                    MakeSpreadIndex(1, 0, 0, 8, 8, true)};
inline __m256i Spread(__m256i lanes, const SpreadIndex& index) {
  const __m256i words =
      _mm256_shuffle_epi8(lanes, _mm256_load_si256(reinterpret_cast<const __m256i*>(index.bytes)));
  return index.sign_extend ? _mm256_srai_epi16(words, 8) : words;
}
// Lanes 2r, 2r + 1: a[r], b[r].
inline __m256 Interleaved(__m128 a, __m128 b) {
  return _mm256_set_m128(_mm_unpackhi_ps(a, b), _mm_unpacklo_ps(a, b));
}
inline void StoreEven(__m256 v, float* out) {
  const __m256 even = _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
  _mm_storeu_ps(out, _mm256_castps256_ps128(even));
}

// The sum of `n` weight vectors' u8·s8 products q[t]·x[t] in each dword lane, by four products:
// exact while n·4·max|u8·s8| < 2^15, so that vpdpwssd may scale it as a 16-bit word.
template <int n>
[[gnu::always_inline]] inline __m256i LaneDots(const __m256i* u8, const __m256i* s8) {
#ifdef __AVXVNNI__
  __m256i dots = _mm256_setzero_si256();
  for (int t = 0; t < n; ++t) dots = _mm256_dpbusd_avx_epi32(dots, u8[t], s8[t]);
  return dots;
#else
  static_assert(n == 0, "vpdpbusd needs AVX-VNNI");
  return _mm256_setzero_si256();
#endif
}
// total + the 16-bit words' pairwise products a·b summed by two (madd, or vpdpwssd with kVnni).
template <bool kVnni>
[[gnu::always_inline]] inline __m256i AddWordDots(__m256i total, __m256i a, __m256i b) {
  if constexpr (kVnni) {
#ifdef __AVXVNNI__
    return _mm256_dpwssd_avx_epi32(total, a, b);
#else
    static_assert(!kVnni, "vpdpwssd needs AVX-VNNI");
#endif
  }
  return _mm256_add_epi32(total, _mm256_madd_epi16(a, b));
}

// Q4_K (Block Q4Kx8Block) and Q5_K (Q5Kx8Block, its fifth bits added to the nibbles), half h of a
// super-block (rows 4h … 4h + 3): lanes 2r and 2r + 1 of its sums belong to row r, as in the
// AVX-512 kernel's.
template <typename BlockType, bool kVnni>
struct Q4KLike {
  using Block = BlockType;
  static constexpr bool kFifth = std::is_same_v<Block, Q5Kx8Block>;
  // With kVnni, weight vectors per vpdpwssd: 4·4·15·128 < 2^15, but five bits take two
  // (2·4·31·128).
  static constexpr int kVectorsPerScale = kFifth ? 2 : 4;

  // The Q4_K fields.
  static const Q4Kx8Block& Low(const Block& block) {
    if constexpr (kFifth) {
      return block.low;
    } else {
      return block;
    }
  }

  // Sub-block j's weights, vector t: bytes 8t … 8t + 7 of row r in qword r.
  static void Weights(const Block& block, int h, int j, __m256i (&q)[4]) {
    const __m256i low = _mm256_set1_epi8(0x0f);
    for (int t = 0; t < 4; ++t) {
      const __m256i raw = Load(Low(block).qs[j / 2] + 64 * t + 32 * h);
      q[t] = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(raw, 4) : raw, low);
      if constexpr (kFifth) {
        // Bit j of each byte to bit 4 (the 16-bit shifts' spill into the neighbouring byte falls
        // outside the mask).
        const __m256i bits = Load(block.qh + 64 * t + 32 * h);
        const __m256i placed =
            j < 4 ? _mm256_slli_epi16(bits, 4 - j) : _mm256_srli_epi16(bits, j - 4);
        q[t] = _mm256_or_si256(q[t], _mm256_and_si256(placed, _mm256_set1_epi8(0x10)));
      }
    }
  }

  // Sub-block j's products q·x for one activation row, scaled and added into `total`. maddubs:
  // a row's four products per qword lane stay in 16 bits over the sub-block (4·2·31·127 < 2^15,
  // five bits too) and madd applies the scale; vpdpbusd: LaneDots by kVectorsPerScale.
  static __m256i AddSubBlock(__m256i total, const __m256i (&q)[4], const __m256i (&x)[4],
                             __m256i scale) {
    if constexpr (kVnni) {
      for (int t = 0; t < 4; t += kVectorsPerScale) {
        total = AddWordDots<true>(total, LaneDots<kVectorsPerScale>(q + t, x + t), scale);
      }
      return total;
    } else {
      __m256i pairs = _mm256_maddubs_epi16(q[0], x[0]);
      for (int t = 1; t < 4; ++t) pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(q[t], x[t]));
      return AddWordDots<false>(total, pairs, scale);
    }
  }

  // Super-block b's products for activation rows x[0, R) added into their sums s[i][r], for
  // halves h0 + i < h0 + kHalves, sub-block by sub-block so that its weights are unpacked once for
  // all R rows and each row's activations broadcast once for both halves.
  template <int R, int kHalves>
  static void Rows(const Block& block, int h0, const Q8KRow* x, int64_t b, __m256 (*s)[R]) {
    const Q4Kx8Block& fields = Low(block);
    // Each row's super-block, one register each, the rest constant offsets (GCC otherwise made
    // every row's every address at the start and kept them on the stack).
    const int8_t* xb[R];
    __m256i total[kHalves][R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      xb[r] = x[r].q + 256 * b;
      for (int i = 0; i < kHalves; ++i) total[i][r] = _mm256_setzero_si256();
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      // Passes of several rows reload each sub-block (1.04× at 256 rows); one row keeps what
      // its even and odd sub-blocks share (the same loads), 1.05× faster than reloading.
      if constexpr (R > 1) ReloadHere();
      __m256i q[kHalves][4], scale[kHalves];
      const __m256i scales = Broadcast8(fields.scales[j]);
      for (int i = 0; i < kHalves; ++i) {
        Weights(block, h0 + i, j, q[i]);
        scale[i] = Spread(scales, kVnni ? kScaleDwords[h0 + i] : kScaleWords[h0 + i]);
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        __m256i xj[4];
        Activations(xb[r] + 32 * j, xj);
        for (int i = 0; i < kHalves; ++i) {
          total[i][r] = AddSubBlock(total[i][r], q[i], xj, scale[i]);
          Settle(total[i][r]);
        }
      }
    }
    for (int i = 0; i < kHalves; ++i) AddMinimums(fields, h0 + i, x, b, total[i], s[i]);
  }

  // Super-block b for activation rows x[0, R). With maddubs one row takes both halves at once:
  // their sub-blocks meet the same broadcast activations, and the halves' chains of integer sums
  // overlap (Q4_K 1.10–1.11× with the weights in cache, level streamed from memory; two rows a
  // pass so 0.99×, hence a half at a time from two). The vpdpbusd kernel keeps a half at a time,
  // as measured when it was written.
  template <int R>
  static void SuperBlock(const Block& block, const Q8KRow* x, int64_t b, __m256 (&s)[2][R]) {
    if constexpr (R == 1 && !kVnni) {
      Rows<R, 2>(block, 0, x, b, s);
    } else {
      for (int h = 0; h < 2; ++h) Rows<R, 1>(block, h, x, b, s + h);
    }
  }

  // Half h's sums s[r] += its super-block's integers `total` less the minimums' term, scaled.
  template <int R>
  static void AddMinimums(const Q4Kx8Block& fields, int h, const Q8KRow* x, int64_t b,
                          const __m256i (&total)[R], __m256 (&s)[R]) {
    // The minimums of sub-blocks 2k and 2k + 1 against the activations' sums 4k … 4k + 3.
    __m256i minimums[4];
    for (int k = 0; k < 4; ++k) {
      minimums[k] = Spread(Broadcast16(fields.mins[2 * k]), kPairWords[h]);
    }
    const __m256 d = Interleaved(Halves4(fields.d + 4 * h), Halves4(fields.dmin + 4 * h));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m256i offset = _mm256_setzero_si256();
      for (int k = 0; k < 4; ++k) {
        offset = AddWordDots<kVnni>(offset, minimums[k], Broadcast8(x[r].sums + 16 * b + 4 * k));
      }
      // Lane 2r: both lanes of the products; lane 2r + 1: both of the minimums' term.
      const __m256i mine = _mm256_blend_epi32(total[r], offset, 0xAA);
      const __m256i other = _mm256_blend_epi32(offset, total[r], 0xAA);
      const __m256i row = _mm256_add_epi32(mine, _mm256_shuffle_epi32(other, 0xB1));
      s[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row), _mm256_mul_ps(d, _mm256_set1_ps(x[r].d[b])),
                             s[r]);
    }
  }

  // Four rows: lane 2r less lane 2r + 1.
  static void Store(__m256 s, float* out) {
    StoreEven(_mm256_sub_ps(s, _mm256_permute_ps(s, 0xB1)), out);
  }
};

// Q6_K, half h: q − 32 (signed) against the activations + 128 (unsigned, `biased_pairs`), the
// block's `bias` starting each super-block's integer sum, as in the AVX-512 kernel.
template <bool kVnni>
struct Q6K {
  using Block = Q6Kx8Block;

  // Sub-blocks j … j + kCount − 1's q − 32 (kCount 1, or 2 from an even j), vector t: row r's
  // weights 4t … 4t + 3 (lane 2r) and 16 + 4t … (lane 2r + 1). The top two bits (bits 2f,
  // 2f + 1 of `high`, f = j % 4) come as 16·bits − 32 from a table indexed by the nibble that
  // holds them, so that one add joins them to the low four; two sub-blocks share their loads
  // and that nibble.
  template <int kCount>
  static void Weights(const Block& block, int h, int j, __m256i (&q)[kCount][4]) {
    const __m256i low = _mm256_set1_epi8(0x0f);
    // By the nibble's value: its bits 2–3 (odd f) or 0–1 (even f) as 16·bits − 32.
    const __m256i odd = _mm256_setr_epi8(-32, -32, -32, -32, -16, -16, -16, -16, 0, 0, 0, 0, 16,
                                         16, 16, 16, -32, -32, -32, -32, -16, -16, -16, -16, 0,
                                         0, 0, 0, 16, 16, 16, 16);
    const __m256i even = _mm256_setr_epi8(-32, -16, 0, 16, -32, -16, 0, 16, -32, -16, 0, 16, -32,
                                          -16, 0, 16, -32, -16, 0, 16, -32, -16, 0, 16, -32, -16,
                                          0, 16, -32, -16, 0, 16);
    for (int t = 0; t < 4; ++t) {
      const __m256i l = Load(block.low[j / 2] + 64 * t + 32 * h);
      const __m256i high = Load(block.high[j / 4] + 64 * t + 32 * h);
      const __m256i nibble = _mm256_and_si256(j % 4 < 2 ? high : _mm256_srli_epi16(high, 4), low);
      for (int u = 0; u < kCount; ++u) {
        const int ju = j + u;
        const __m256i bits03 = _mm256_and_si256(ju % 2 ? _mm256_srli_epi16(l, 4) : l, low);
        q[u][t] = _mm256_add_epi8(bits03, _mm256_shuffle_epi8(ju % 2 ? odd : even, nibble));
      }
    }
  }

  // Sub-block j's products for one activation row, scaled by its two groups' scales and added
  // into `total`: a pair's products are at most 2·255·32, so two vectors' sum stays in 16 bits,
  // and madd (vpdpwssd with kVnni) applies the scales. (vpdpbusd fits one vector's dword lanes in
  // 16 bits, 4·255·32, and then needs a vpdpwssd per vector: 1.05× AVX2's at 256 rows and
  // slower at one, against 1.15× and level this way.) Bound of a row's integer sum as in the
  // AVX-512 kernel: < 2^31.
  static __m256i AddSubBlock(__m256i total, const __m256i (&q)[4], const __m256i (&x)[4],
                             __m256i scales) {
    for (int t = 0; t < 4; t += 2) {
      const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(x[t], q[t]),
                                             _mm256_maddubs_epi16(x[t + 1], q[t + 1]));
      total = AddWordDots<kVnni>(total, pairs, scales);
    }
    return total;
  }

  // Super-block b's products for activation rows x[0, R) added into their sums s[r], half h
  // (as Q4KLike::Rows). One row unpacks two sub-blocks at a time (1.05×); more rows fill the
  // registers with their sums and take one.
  template <int R>
  static void Rows(const Block& block, int h, const Q8KRow* x, int64_t b, __m256 (&s)[R]) {
    const __m128i bias = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.bias + 4 * h));
    const __m256i start = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_cvtepu32_epi64(bias));
    const uint8_t* xb[R];  // Each row's super-block (see Q4KLike::Rows).
    __m256i total[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      xb[r] = x[r].biased_pairs + 256 * b;
      total[r] = start;
    }
    constexpr int kCount = R == 1 ? 2 : 1;
#pragma GCC unroll 8
    for (int j = 0; j < 8; j += kCount) {
      ReloadHere();
      __m256i q[kCount][4];
      Weights<kCount>(block, h, j, q);
      for (int u = 0; u < kCount; ++u) {
        const __m256i scales =
            Spread(Broadcast16(block.scales[2 * (j + u)]), kSignedPairWords[h]);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          __m256i xj[4];
          Activations(xb[r] + 32 * (j + u), xj);
          total[r] = AddSubBlock(total[r], q[u], xj, scales);
          Settle(total[r]);
        }
      }
    }
    const __m128 d4 = Halves4(block.d + 4 * h);
    const __m256 d = Interleaved(d4, d4);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      // A row's two lanes added in integers before the conversion (the +128's products cancel
      // only in the sum).
      const __m256i row = _mm256_add_epi32(total[r], _mm256_shuffle_epi32(total[r], 0xB1));
      s[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(row), _mm256_mul_ps(d, _mm256_set1_ps(x[r].d[b])),
                             s[r]);
    }
  }

  // Super-block b for activation rows x[0, R), a half at a time (both at once for one row, as
  // Q4KLike's: 0.85–0.94×).
  template <int R>
  static void SuperBlock(const Block& block, const Q8KRow* x, int64_t b, __m256 (&s)[2][R]) {
    for (int h = 0; h < 2; ++h) Rows<R>(block, h, x, b, s[h]);
  }

  static void Store(__m256 s, float* out) { StoreEven(s, out); }
};

// Activation rows x[0, R) against one group of eight weight rows, both halves per super-block,
// so the group streams from memory once.
template <typename K, int R>
struct Group {
  static void Run(const typename K::Block* w, int64_t blocks, const Q8KRow* x, float* out,
                  int64_t out_stride) {
    __m256 sums[2][R];
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < R; ++r) sums[h][r] = _mm256_setzero_ps();
    }
    // Q4_K two super-blocks ahead, Q5_K and Q6_K one (repacked_prefetch.h).
    constexpr int kAhead = BlocksNear(sizeof(typename K::Block), kYmmPrefetchBytes);
    for (int64_t b = 0; b < blocks; ++b) {
      const char* ahead = reinterpret_cast<const char*>(w + b + kAhead);
      for (size_t line = 0; line < sizeof(typename K::Block); line += 64) {
        _mm_prefetch(ahead + line, _MM_HINT_T0);
      }
      K::template SuperBlock<R>(w[b], x, b, sums);
    }
    for (int r = 0; r < R; ++r) {
      for (int h = 0; h < 2; ++h) K::Store(sums[h][r], out + r * out_stride + 4 * h);
    }
  }
};

// Output features [n_begin, n_end) of the repacked matrix p.w; kVnni: with vpdpbusd and vpdpwssd.
template <bool kVnni>
void DotRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  RepackedKQuantRange<Group, Q4KLike<Q4Kx8Block, kVnni>, Q4KLike<Q5Kx8Block, kVnni>, Q6K<kVnni>,
                      kRows<kVnni>>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::ARBOR_QUANT_ISA_NS::kquant

#endif  // ARBOR_KERNELS_QUANT_REPACKED_KQUANT_YMM_KERNEL_H_
