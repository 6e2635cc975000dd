// The 256-bit kernel of the per-32 repacked rows (WeightType::kQ4x16, kQ5x16, kQ8x16,
// repacked_rows.h), for CPUs without AVX-512: written once and compiled by quant_dot_avx2.cc
// (maddubs) and quant_dot_avxvnni.cc (vpdpbusd on ymm) inside their own namespaces
// (ARBOR_QUANT_ISA_NS; see quant_chunk_bytes.h for why).
//
// A sixteen-row group's 64-byte vectors are read as two 32-byte halves, rows 0–7 and 8–15, so
// the layout is the AVX-512 kernel's and one repacking serves both. Per block, each weight vector
// (eight rows × four weights) is loaded (unpacked) once and met by a pass's activation rows' four
// bytes, broadcast (one broadcast for both halves where a pass takes both, kBothHalves); each
// row's integer sum for the eight weight rows of a half is then converted once and scaled by one
// FMA. The integer sums are exact, and every lane's float operations are the AVX-512 kernel's in
// the same order, so a row's result is the same bits on either, and independent of its batch.
#ifndef ARBOR_QUANT_ISA_NS
#error "define ARBOR_QUANT_ISA_NS first"
#endif
#ifndef ARBOR_KERNELS_QUANT_REPACKED_YMM_KERNEL_H_
#define ARBOR_KERNELS_QUANT_REPACKED_YMM_KERNEL_H_

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>

#include "kernels/quant/quant_dot.h"
#include "kernels/quant/repacked_prefetch.h"
#include "kernels/quant/repacked_rows.h"
#include "kernels/quant/row_passes.h"

namespace arbor::kernels::ARBOR_QUANT_ISA_NS::repacked {

// Whether a block's weights are nibbles with offsets (Q4x16Block, Q5x16Block), not 8-bit ones;
// and whether they have fifth bits (Q5x16Block).
template <typename Block>
constexpr bool kNibbles = !std::is_same_v<Block, Q8x16Block>;
template <typename Block>
constexpr bool kFifth = std::is_same_v<Block, Q5x16Block>;

// Whether a pass takes both halves of a block at once, so that each broadcast of a row's
// activations meets sixteen weight rows, not eight: half the broadcasts, which take a vector
// pipe each on a Zen 3 as an ALU op does (with maddubs, against a half at a time: Q4_1 1.12–1.13×
// at 8 to 48 rows and 1.08× at 256, Q8_0 1.03× and 1.10×; Q5_1, whose fifth bits take registers
// of their own, 0.91–0.98×). The vpdpbusd kernel keeps a half at a time, as measured when it was
// written (no AVX-VNNI CPU has raced both).
template <bool kVnni, typename Block>
constexpr bool kBothHalves = !kVnni && !kFifth<Block>;
// Activation rows per pass over a group: their integer sums for the halves taken, the weight
// vectors of a step and the broadcasts fill the sixteen ymm registers. A half at a time, eight
// rows (against four: Q4_1 1.1× at 8 rows and 1.06× at 256, Q8_0 level to 1.02×); both halves,
// four (against three and five, each raced apart against a half at a time: 1.01–1.05× and
// 1.01–1.02×).
template <bool kVnni, typename Block>
constexpr int kRows = kBothHalves<kVnni, Block> ? 4 : 8;

inline __m256i Load(const uint8_t* at) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
}
// Four bytes to every lane, as a load (vbroadcastss: GCC spills a vpbroadcastd of an integer
// through the stack to feed maddubs a memory operand).
inline __m256i Broadcast4(const int8_t* at) {
  return _mm256_castps_si256(_mm256_broadcast_ss(reinterpret_cast<const float*>(at)));
}

// `v` as it is here: GCC would otherwise reassociate a row's chain of integer adds into a tree
// of all the block's products, whose live values spill to the stack.
[[gnu::always_inline]] inline void Settle(__m256i& v) { asm("" : "+x"(v)); }

// 16 in byte k where bit k of `bits` is set, else 0: byte k takes byte k / 8 of `bits` and tests
// bit k % 8 of it.
inline __m256i FifthBits(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int32_t>(bits)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                       3, 3, 3, 3, 3, 3));
  const __m256i select = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select),
                          _mm256_set1_epi8(16));
}

// HalfDots' 4-bit weights. Vector t: weights 4t … 4t + 3 in the low nibbles, 16 + 4t … 16 + 4t + 3
// in the high ones (with their fifth bits: masks t and 4 + t, the half's 32 bits). maddubs' pair
// sums stay in 16 bits over a 4-bit block (8·2·15·127 < 2^15); 5-bit ones are widened vector by
// vector.
template <bool kVnni, int R, typename Block, int kHalves>
[[gnu::always_inline]] inline void NibbleDots(const Block& block, int h0,
                                              const int8_t* const (&x)[R],
                                              __m256i (&sums)[kHalves][R]) {
  const __m256i ones = _mm256_set1_epi16(1), low = _mm256_set1_epi8(0x0f);
#pragma GCC unroll 4
  for (int t = 0; t < 4; ++t) {
    __m256i first[kHalves], second[kHalves];
    for (int i = 0; i < kHalves; ++i) {
      const int h = h0 + i;
      const __m256i bytes = Load(block.qs + 64 * t + 32 * h);
      first[i] = _mm256_and_si256(bytes, low);
      second[i] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low);
      if constexpr (kFifth<Block>) {
        first[i] =
            _mm256_or_si256(first[i], FifthBits(static_cast<uint32_t>(block.qh[t] >> (32 * h))));
        second[i] = _mm256_or_si256(second[i],
                                    FifthBits(static_cast<uint32_t>(block.qh[4 + t] >> (32 * h))));
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i x_first = Broadcast4(x[r] + 4 * t), x_second = Broadcast4(x[r] + 16 + 4 * t);
      for (int i = 0; i < kHalves; ++i) {
        if constexpr (kVnni) {
          sums[i][r] = _mm256_dpbusd_avx_epi32(sums[i][r], first[i], x_first);
          sums[i][r] = _mm256_dpbusd_avx_epi32(sums[i][r], second[i], x_second);
        } else {
          const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(first[i], x_first),
                                                 _mm256_maddubs_epi16(second[i], x_second));
          sums[i][r] = kFifth<Block> ? _mm256_add_epi32(sums[i][r], _mm256_madd_epi16(pairs, ones))
                                     : _mm256_add_epi16(sums[i][r], pairs);
        }
        Settle(sums[i][r]);
      }
    }
  }
  if constexpr (!kVnni && !kFifth<Block>) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      for (int i = 0; i < kHalves; ++i) sums[i][r] = _mm256_madd_epi16(sums[i][r], ones);
    }
  }
}

// HalfDots' 8-bit weights: as stored (q + 128) for vpdpbusd, or as |q| against x with q's sign
// for maddubs, whose 16-bit pair sums would saturate on unsigned bytes up to 255.
template <bool kVnni, int R, typename Block, int kHalves>
[[gnu::always_inline]] inline void ByteDots(const Block& block, int h0, const int8_t* const (&x)[R],
                                            __m256i (&sums)[kHalves][R]) {
  const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
  for (int u = 0; u < 8; ++u) {
    __m256i stored[kHalves], q[kHalves], magnitude[kHalves];
    for (int i = 0; i < kHalves; ++i) {
      stored[i] = Load(block.qs + 64 * u + 32 * (h0 + i));
      q[i] = _mm256_xor_si256(stored[i], _mm256_set1_epi8(-128));
      magnitude[i] = _mm256_abs_epi8(q[i]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i xu = Broadcast4(x[r] + 4 * u);
      for (int i = 0; i < kHalves; ++i) {
        if constexpr (kVnni) {
          // Less 128·Σx from the start.
          sums[i][r] = _mm256_dpbusd_avx_epi32(sums[i][r], stored[i], xu);
        } else {
          const __m256i pairs = _mm256_maddubs_epi16(magnitude[i], _mm256_sign_epi8(xu, q[i]));
          sums[i][r] = _mm256_add_epi32(sums[i][r], _mm256_madd_epi16(pairs, ones));
        }
        Settle(sums[i][r]);
      }
    }
  }
}

// Σ q·x over halves h0 … h0 + kHalves − 1 of a block (half h: rows 8h … 8h + 7, lane r for row
// 8h + r, into sums[h − h0]) for activation rows x[0, R) (each the block's 32 bytes; x_sums their
// Σq), weight vector by weight vector, so that each is loaded (unpacked) once into a register for
// all R rows and each row's broadcast meets every half taken.
template <bool kVnni, int R, typename Block, int kHalves>
[[gnu::always_inline]] inline void HalfDots(const Block& block, int h0, const int8_t* const (&x)[R],
                                            const int32_t (&x_sums)[R],
                                            __m256i (&sums)[kHalves][R]) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < kHalves; ++i) {
      sums[i][r] =
          kVnni && !kNibbles<Block> ? _mm256_set1_epi32(-128 * x_sums[r]) : _mm256_setzero_si256();
    }
  }
  if constexpr (kNibbles<Block>) {
    NibbleDots<kVnni, R, Block, kHalves>(block, h0, x, sums);
  } else {
    ByteDots<kVnni, R, Block, kHalves>(block, h0, x, sums);
  }
}

inline __m256 Halves(const uint16_t* h) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

// Activation rows [row0, row0 + R) against one group of sixteen weight rows, both halves per
// block, so the group streams from memory once.
template <bool kVnni, int R, typename Block>
void Rows(const Block* w, int64_t blocks, const Q8Rows& x, int64_t row0, float* out,
          int64_t out_stride) {
  __m256 acc[2][R];
  const int8_t* xq[R];
  const float* xd[R];
  const float* xs[R];    // Whole-block sums d·Σq, 24 floats apart (SumIndex): 4-bit offsets.
  const int32_t* xi[R];  // Σq per block: the 8-bit weights' bias.
  for (int r = 0; r < R; ++r) {
    xq[r] = x.q + 32 * (row0 + r) * x.stride;
    xd[r] = x.scales + 8 * (row0 + r) * x.stride;
    xs[r] = x.sums + SumIndex(row0 + r, 0, 2, x.stride);
    xi[r] = x.q_sums + (row0 + r) * x.stride;
    acc[0][r] = acc[1][r] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const Block& block = w[b];
    const char* ahead = reinterpret_cast<const char*>(
        &block + RepackedPrefetchBlocks(sizeof(Block), R, kYmmPrefetchBytes));
    for (size_t line = 0; line < sizeof(Block); line += 64) _mm_prefetch(ahead + line, _MM_HINT_T0);
    const int8_t* xb[R];
    int32_t x_sums[R];
    for (int r = 0; r < R; ++r) {
      xb[r] = xq[r] + 32 * b;
      x_sums[r] = xi[r][b];
    }
    constexpr int kHalves = kBothHalves<kVnni, Block> ? 2 : 1;
#pragma GCC unroll 2
    for (int h0 = 0; h0 < 2; h0 += kHalves) {
      __m256i sums[kHalves][R];
      HalfDots<kVnni, R, Block, kHalves>(block, h0, xb, x_sums, sums);
      for (int i = 0; i < kHalves; ++i) {
        const int h = h0 + i;
        const __m256 d = Halves(block.d + 8 * h);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m256i sum = sums[i][r];
          if constexpr (kNibbles<Block>) {
            acc[h][r] =
                _mm256_fmadd_ps(Halves(block.m + 8 * h), _mm256_set1_ps(xs[r][24 * b]), acc[h][r]);
          }
          acc[h][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum),
                                      _mm256_mul_ps(d, _mm256_set1_ps(xd[r][8 * b])), acc[h][r]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(out + (row0 + r) * out_stride + 8 * h, acc[h][r]);
  }
}

template <bool kVnni, typename Block>
void Range(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  using RowsFn = void (*)(const Block*, int64_t, const Q8Rows&, int64_t, float*, int64_t);
  static constexpr auto kPasses = []<size_t... R>(std::index_sequence<R...>) {
    return std::array<RowsFn, kRows<kVnni, Block>>{Rows<kVnni, R + 1, Block>...};
  }
  (std::make_index_sequence<kRows<kVnni, Block>>());
  const Block* w = static_cast<const Block*>(p.w);
  const int64_t blocks = p.x.chunks;
  for (int64_t n = n_begin; n < n_end; n += 16) {
    ForEachRowPass(p.m, kRows<kVnni, Block>, [&](int64_t m0, int64_t rows) {
      kPasses[rows - 1](w + (n / 16) * blocks, blocks, p.x, m0, p.out + n, p.out_stride);
    });
  }
}

// RepackedDotRange (quant_dot.h) for this instruction set.
template <bool kVnni>
void DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  if (p.w_type == WeightType::kQ8x16) return Range<kVnni, Q8x16Block>(p, n_begin, n_end);
  if (p.w_type == WeightType::kQ5x16) return Range<kVnni, Q5x16Block>(p, n_begin, n_end);
  Range<kVnni, Q4x16Block>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::ARBOR_QUANT_ISA_NS::repacked

#endif  // ARBOR_KERNELS_QUANT_REPACKED_YMM_KERNEL_H_
