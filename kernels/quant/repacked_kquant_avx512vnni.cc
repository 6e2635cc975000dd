// The kernels of Q4_K, Q5_K and Q6_K rows repacked eight at a time (WeightType::kQ4Kx8, kQ5Kx8,
// kQ6Kx8, repacked_rows.h) against per-256 activations (q8k_activations.h), for AVX-512 with VNNI.
// Compiled with those extensions only (kernels/CMakeLists.txt).
//
// Why layouts of their own: the file's K-quant kernel (quant_dot_q8k_kernel.h) decodes each
// weight row's bits and scales once per group of activation rows and multiplies one weight row at
// a time (maddubs, then madd by the scale); in a 256-token prefill or a step of 32 siblings that
// decoding and the two-instruction products bound it. Here a super-block's eight rows are
// unpacked sub-block by sub-block into registers, once for all the activation rows of a pass (a
// whole super-block's would outgrow the register file and go through memory: Q6_K's took 1.6× the
// time at one row), and each activation row takes four vpdpbusd per 32 weights for all eight
// weight rows, the eight rows' scales applied in integers (vpdpwssd, or a multiply for
// Q6_K), and one conversion per super-block. The order of every row's operations is fixed, so its
// result does not depend on the rows beside it.
#define ARBOR_QUANT_ISA_NS avx512vnni
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/quant/quant_dot.h"
#include "kernels/quant/repacked_kquant_range.h"
#include "kernels/quant/repacked_rows.h"
#include "kernels/quant/repacked_zmm_rows.h"

namespace arbor::kernels::avx512vnni {
namespace {

constexpr int kRows = 8;  // Activation rows per pass over a group's super-block.

// Eight bytes to sixteen int32 lanes, lanes 2r and 2r + 1 from a[r] and b[r].
inline __m512i PairLanes(const void* a, const void* b, bool is_signed) {
  int64_t ea, eb;
  std::memcpy(&ea, a, 8);
  std::memcpy(&eb, b, 8);
  const __m128i v = _mm_unpacklo_epi8(_mm_cvtsi64_si128(ea), _mm_cvtsi64_si128(eb));
  return is_signed ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
}
inline __m256 Halves(const uint16_t* h) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

// Σ w·x of 32 weights of eight weight rows (lanes 2r and 2r + 1 for row r) for activation rows
// x[kFrom, kFrom + kRows): each of the vectors w[kFirst, kFirst + kCount) against the eight
// activation bytes its rows hold at x[a] + offset, broadcast (unsigned · signed, or the other
// way round), into dot[a]. Vector by vector, all rows at each, so that the rows' chains of
// vpdpbusd interleave (row after row, each chain's latency held the next back). Integer sums:
// the order changes no bit.
template <bool kActivationsSigned, int kFrom, int kRows, int kFirst = 0, int kCount = 4, int R>
[[gnu::always_inline]] inline void Dots(const __m512i* w, const char* const (&x)[R], int64_t offset,
                                        __m512i (&dot)[R]) {
#pragma GCC unroll 8
  for (int a = kFrom; a < kFrom + kRows; ++a) dot[a] = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int t = kFirst; t < kFirst + kCount; ++t) {
#pragma GCC unroll 8
    for (int a = kFrom; a < kFrom + kRows; ++a) {
      int64_t eight;
      std::memcpy(&eight, x[a] + offset + 8 * t, 8);
      const __m512i xt = _mm512_set1_epi64(eight);
      dot[a] = kActivationsSigned ? _mm512_dpbusd_epi32(dot[a], w[t], xt)
                                  : _mm512_dpbusd_epi32(dot[a], xt, w[t]);
    }
  }
}

// Rows [0, R) in chunks of at most four, `body.template operator()<kFrom, kRows>()` each: four
// rows' pairs of dots (eight chains) fit the registers beside eight rows' totals.
template <int R, typename Body>
[[gnu::always_inline]] inline void ByFourRows(const Body& body) {
  body.template operator()<0, (R < 4 ? R : 4)>();
  if constexpr (R > 4) body.template operator()<4, R - 4>();
}

// Q4_K (Block Q4Kx8Block) and Q5_K (Q5Kx8Block): w = d·scale·q − dmin·minimum per 32-weight
// sub-block, q (four bits, or five with Q5_K's fifth bits added) unsigned against signed
// activations, the minimums' term from the activations' sums per 16.
template <typename BlockType>
struct Q4KLike {
  using Block = BlockType;
  static constexpr bool kFifth = std::is_same_v<Block, Q5Kx8Block>;
  struct Unpacked {
    const Block* block;  // Its weights are rebuilt pair by pair of sub-blocks in Rows.
    // Q4_K: [i], the scales of sub-blocks 2i and 2i + 1 as int16 pairs, laid out as Rows' packed
    // dots meet them. Q5_K: [j], sub-block j's scales as int16 pairs (s, s), in 128-bit lane k
    // rows 2k, 2k + 1, 2k, 2k + 1 (as Rows packs the halves of a sub-block's dots).
    __m512i scales[kFifth ? 8 : 4];
    __m512i minimums[4];  // [k]: row r's minimums of sub-blocks 2k (lane 2r) and 2k + 1, each
                          // as an int16 pair (m, m).
    __m512 d;             // Row r's d in lane 2r, dmin in lane 2r + 1.
  };
  using Sums = __m512;  // Row r's scaled products in lane 2r, minimums' term in lane 2r + 1.

  // The Q4_K fields.
  static const Q4Kx8Block& Low(const Block& block) {
    if constexpr (kFifth) {
      return block.low;
    } else {
      return block;
    }
  }

  // Sub-blocks 2i and 2i + 1 into registers, q[0 … 3] and q[4 … 7]: vector t of each holds
  // weights 8t … 8t + 7 of row r in qword r. Q5_K's fifth bits: bit j of each byte to bit 4 of
  // sub-block j's (the 16-bit shifts' spill into the neighbouring byte falls outside the mask),
  // or-ed in: (placed & 0x10) | q.
  static void PairWeights(const Block& block, int i, __m512i (&q)[8]) {
    LoadNibbles(Low(block).qs[i], q);
    if constexpr (kFifth) {
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) {
        const __m512i bits = _mm512_loadu_si512(block.qh + 64 * t);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const int j = 2 * i + h;
          const __m512i placed =
              j < 4 ? _mm512_slli_epi16(bits, 4 - j) : _mm512_srli_epi16(bits, j - 4);
          q[4 * h + t] =
              _mm512_ternarylogic_epi32(placed, _mm512_set1_epi8(0x10), q[4 * h + t], 0xEA);
        }
      }
    }
  }

  static void Unpack(const Block& block, Unpacked& u) {
    const Q4Kx8Block& fields = Low(block);
    u.block = &block;
    if constexpr (kFifth) {
      const __m512i rows = _mm512_set_epi32(7, 6, 7, 6, 5, 4, 5, 4, 3, 2, 3, 2, 1, 0, 1, 0);
      for (int j = 0; j < 8; ++j) {
        int64_t eight;
        std::memcpy(&eight, fields.scales[j], 8);
        const __m512i scale = _mm512_permutexvar_epi32(
            rows, _mm512_castsi256_si512(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(eight))));
        u.scales[j] = _mm512_or_si512(scale, _mm512_slli_epi32(scale, 16));
      }
    } else {
      UnpackPairedScales(fields, u);
    }
    for (int k = 0; k < 4; ++k) {
      const __m512i m = PairLanes(fields.mins[2 * k], fields.mins[2 * k + 1], false);
      u.minimums[k] = _mm512_or_si512(m, _mm512_slli_epi32(m, 16));
    }
    const __m512i interleave =
        _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    u.d = _mm512_permutex2var_ps(_mm512_castps256_ps512(Halves(fields.d)), interleave,
                                 _mm512_castps256_ps512(Halves(fields.dmin)));
  }

  static void UnpackPairedScales(const Q4Kx8Block& fields, Unpacked& u) {
    // 128-bit lane k (rows 2k, 2k + 1): (s(2k), s(2k)), (s(2k + 1), s(2k + 1)) of sub-block 2i,
    // then of 2i + 1, from words 0 … 7 (sub-block 2i's rows) and 8 … 15 (2i + 1's).
    alignas(64) static constexpr int16_t kSpread[32] = {0,  0,  1,  1,  8,  8, 9,  9,  2,  2,  3,
                                                        3,  10, 10, 11, 11, 4, 4,  5,  5,  12, 12,
                                                        13, 13, 6,  6,  7,  7, 14, 14, 15, 15};
    const __m512i spread = _mm512_load_si512(kSpread);
    for (int i = 0; i < 4; ++i) {
      int64_t even, odd;
      std::memcpy(&even, fields.scales[2 * i], 8);
      std::memcpy(&odd, fields.scales[2 * i + 1], 8);
      const __m256i words = _mm256_cvtepu8_epi16(_mm_set_epi64x(odd, even));
      u.scales[i] = _mm512_permutexvar_epi16(spread, _mm512_castsi256_si512(words));
    }
  }

  // Super-block b's products for activation rows x[0, R) added into their sums, packed to int16
  // so that one vpdpwssd applies the scales and adds each row's two lanes, where multiplies and
  // adds did. Q4_K: two sub-blocks at a time, whose integer dots fit int16 (16 products,
  // |q·x| ≤ 15·128, so ≤ 30,720). Q5_K's (≤ 16·31·128) do not: a sub-block at a time, as the
  // dots of its first two and its last two vectors (≤ 8·31·128 = 31,744; 1.13–1.27× the integer
  // multiply it took before, from 8 rows on Intel, where vpmulld is two instructions). Sub-block
  // (pair) by sub-block, so that its weights are loaded once into registers for all R rows. Bound
  // of a row's integer sum: 8·63·16·31·128 < 2^31.
  template <int R>
  static void Rows(const Unpacked& u, const Q8KRow* x, int64_t b, Sums (&s)[R]) {
    __m512i total[R];
    const char* bytes[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      total[r] = _mm512_setzero_si512();
      bytes[r] = reinterpret_cast<const char*>(x[r].q + 256 * b);
    }
    // In 128-bit lane k: rows 2k's and 2k + 1's lanes of one packed half, then of the other.
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      __m512i q[8];
      PairWeights(*u.block, i, q);
      ByFourRows<R>([&]<int kFrom, int kRows>() {
        __m512i low[R], high[R];
        if constexpr (kFifth) {
#pragma GCC unroll 2
          for (int h = 0; h < 2; ++h) {
            Dots<true, kFrom, kRows, 0, 2>(q + 4 * h, bytes, 32 * (2 * i + h), low);
            Dots<true, kFrom, kRows, 2, 2>(q + 4 * h, bytes, 32 * (2 * i + h), high);
#pragma GCC unroll 4
            for (int r = kFrom; r < kFrom + kRows; ++r) {
              total[r] = _mm512_dpwssd_epi32(total[r], _mm512_packs_epi32(low[r], high[r]),
                                             u.scales[2 * i + h]);
            }
          }
        } else {
          Dots<true, kFrom, kRows>(q, bytes, 64 * i, low);
          Dots<true, kFrom, kRows>(q + 4, bytes, 64 * i + 32, high);
#pragma GCC unroll 4
          for (int r = kFrom; r < kFrom + kRows; ++r) {
            total[r] =
                _mm512_dpwssd_epi32(total[r], _mm512_packs_epi32(low[r], high[r]), u.scales[i]);
          }
        }
      });
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      // 128-bit lane k held rows 2k, 2k + 1 of one half, then of the other: now lanes 2r and
      // 2r + 1 hold row r's, as the minimums' term below.
      total[r] = _mm512_shuffle_epi32(total[r], _MM_PERM_DBCA);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      // Σ minimum·Σq: sums 4k … 4k + 3 (sub-blocks 2k, 2k + 1) broadcast against pairs (m, m).
      __m512i offset = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        int64_t four;
        std::memcpy(&four, x[r].sums + 16 * b + 4 * k, 8);
        offset = _mm512_dpwssd_epi32(offset, u.minimums[k], _mm512_set1_epi64(four));
      }
      // Lane 2r: both lanes of the products; lane 2r + 1: both of the minimums' term.
      const __m512i mine = _mm512_mask_blend_epi32(0xAAAA, total[r], offset);
      const __m512i other = _mm512_mask_blend_epi32(0xAAAA, offset, total[r]);
      const __m512i row = _mm512_add_epi32(mine, _mm512_shuffle_epi32(other, _MM_PERM_CDAB));
      const __m512 dx = _mm512_set1_ps(x[r].d[b]);
      s[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(row), _mm512_mul_ps(u.d, dx), s[r]);
    }
  }

  static void Store(const Sums& s, float* out) {
    // Lane 2r less lane 2r + 1, the qwords' low halves narrowed to rows 0 … 7.
    const __m512 difference = _mm512_sub_ps(s, _mm512_permute_ps(s, 0xB1));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                        _mm512_cvtepi64_epi32(_mm512_castps_si512(difference)));
  }
};

using Q4K = Q4KLike<Q4Kx8Block>;
using Q5K = Q4KLike<Q5Kx8Block>;

// Q6_K: w = d·scale·(q − 32) per 16 weights, q − 32 signed against the activations + 128
// (unsigned, q8k_activations.h's `biased_pairs`); the block's `bias` starts each super-block's
// integer sum, so the +128 cancels in integers and no activation sums are needed.
struct Q6K {
  using Block = Q6Kx8Block;
  struct Unpacked {
    const Block* block;  // Its weights are rebuilt sub-block by sub-block in Rows, in registers.
    __m512i scales[8];   // Sub-block j: row r's scales of groups 2j (lane 2r) and 2j + 1.
    __m512i start;       // Lane 2r: −bias of row r; odd lanes 0.
    __m512 d;            // Lanes 2r and 2r + 1: row r's d.
  };
  using Sums = __m512;  // Lanes 2r and 2r + 1: row r's sum, twice.

  static void Unpack(const Block& block, Unpacked& u) {
    u.block = &block;
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      u.scales[j] = PairLanes(block.scales[2 * j], block.scales[2 * j + 1], true);
    }
    const __m256i bias = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.bias));
    u.start = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_cvtepu32_epi64(bias));
    const __m512i twice = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    u.d = _mm512_permutexvar_ps(twice, _mm512_castps256_ps512(Halves(block.d)));
  }

  // Bound of a row's integer sum: |bias| and the products' sum each ≤ 16·128·16·255·32 <
  // 2^28, so < 2^31 at every step.
  template <int R>
  static void Rows(const Unpacked& u, const Q8KRow* x, int64_t b, Sums (&s)[R]) {
    __m512i total[R];
    const char* bytes[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      total[r] = u.start;
      bytes[r] = reinterpret_cast<const char*>(x[r].biased_pairs + 256 * b);
    }
    // Sub-block by sub-block: its weights rebuilt into registers once for all R rows (all eight
    // sub-blocks' would outgrow the register file), q − 32 against the activations + 128; each
    // sub-block's scales one integer multiply (a group's dots, up to 16·255·32, outgrow int16).
    const __m512i zero_point = _mm512_set1_epi8(32);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      __m512i q[4];
#pragma GCC unroll 4
      for (int t = 0; t < 4; ++t) {
        q[t] = _mm512_sub_epi8(Q6KWeights(*u.block, j, t), zero_point);
      }
      ByFourRows<R>([&]<int kFrom, int kRows>() {
        __m512i dot[R];
        Dots</*kActivationsSigned=*/false, kFrom, kRows>(q, bytes, 32 * j, dot);
#pragma GCC unroll 4
        for (int r = kFrom; r < kFrom + kRows; ++r) {
          total[r] = _mm512_add_epi32(total[r], _mm512_mullo_epi32(dot[r], u.scales[j]));
        }
      });
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      // A row's two lanes added in integers before the conversion: each alone holds a part of
      // the +128's products, which cancel only in the sum.
      const __m512i row = _mm512_add_epi32(total[r], _mm512_shuffle_epi32(total[r], _MM_PERM_CDAB));
      const __m512 dx = _mm512_set1_ps(x[r].d[b]);
      s[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(row), _mm512_mul_ps(u.d, dx), s[r]);
    }
  }

  static void Store(const Sums& s, float* out) {
    // Lane 2r of each row (the qwords' low halves), narrowed to rows 0 … 7.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                        _mm512_cvtepi64_epi32(_mm512_castps_si512(s)));
  }
};

// Activation rows x[0, R) against one group of eight weight rows. (Unpacking a super-block once
// for several passes of rows, the unpacked weights kept in memory between them, was slower at
// every row count.)
template <typename K, int R>
struct Group {
  static void Run(const typename K::Block* w, int64_t blocks, const Q8KRow* x, float* out,
                  int64_t out_stride) {
    typename K::Sums sums[R];
    for (int r = 0; r < R; ++r) sums[r] = typename K::Sums{};
    typename K::Unpacked u;
    for (int64_t b = 0; b < blocks; ++b) {
      // Four super-blocks ahead, 4.7–6.8 KB (into the next group at the end: groups are
      // consecutive): a one-row step streams its weights from memory, and two ahead left an Intel
      // Xeon's 1B-shape step 6 % slower (as far ahead as the best streaming read prefetches).
      const char* ahead = reinterpret_cast<const char*>(w + b + 4);
      for (size_t line = 0; line < sizeof(typename K::Block); line += 64) {
        _mm_prefetch(ahead + line, _MM_HINT_T0);
      }
      K::Unpack(w[b], u);
      K::template Rows<R>(u, x, b, sums);
    }
    for (int r = 0; r < R; ++r) K::Store(sums[r], out + r * out_stride);
  }
};

}  // namespace

void RepackedKQuantDotRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  RepackedKQuantRange<Group, Q4K, Q5K, Q6K, kRows>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::avx512vnni
