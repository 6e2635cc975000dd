// The kernels of Q4_K and Q6_K rows repacked eight at a time (WeightType::kQ4Kx8, kQ6Kx8,
// repacked_rows.h) against per-256 activations (q8k_activations.h), for AVX-512 with VNNI. Compiled
// with those extensions only (kernels/CMakeLists.txt).
//
// Why layouts of their own: the file's K-quant kernel (quant_dot_q8k_kernel.h) decodes each
// weight row's bits and scales once per group of activation rows and multiplies one weight row at
// a time (maddubs, then madd by the scale); in a 256-token prefill or a step of 32 siblings that
// decoding and the two-instruction products bound it. Here a super-block's eight rows are
// unpacked once into a buffer, and each activation row takes four vpdpbusd per 32 weights for all
// eight weight rows, integer multiplies by the eight rows' scales, and one conversion per
// super-block. The order of every row's operations is fixed, so its result does not depend on
// the rows beside it.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/quant/quant_dot.h"
#include "kernels/quant/repacked_rows.h"

namespace arbor::kernels::avx512vnni {
namespace {

constexpr int kRows = 8;  // Activation rows per pass over a group's super-block.

// A group's super-block as the per-row loop reads it.
struct Unpacked {
  __m512i q[8][4];     // Sub-block j, vector t: weights 8t … 8t + 7 of row r in qword r.
  __m512i scales[16];  // Q4_K: sub-block j's scales in [j]; Q6_K: 16-weight group g's in [g]
                       // (lanes 2r and 2r + 1 for row r).
  __m256i offsets[8];  // The offset's weights as int16 pairs, pair r for row r: Q4_K's minimum
                       // of sub-block j twice, Q6_K's scales of groups 2j and 2j + 1.
  __m256 d, offset_d;  // Per row: d, and the offset's factor (Q4_K: dmin; Q6_K: 32·d).
};

// Eight bytes to sixteen int32 lanes, lanes 2r and 2r + 1 from byte r.
inline __m512i SpreadScales(const void* bytes, bool is_signed) {
  int64_t eight;
  std::memcpy(&eight, bytes, 8);
  const __m128i b = _mm_cvtsi64_si128(eight);
  const __m128i v = _mm_unpacklo_epi8(b, b);
  return is_signed ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
}
// Two rows of eight bytes to int16 pairs (a[r], b[r]).
inline __m256i Pairs(const void* a, const void* b, bool is_signed) {
  int64_t ea, eb;
  std::memcpy(&ea, a, 8);
  std::memcpy(&eb, b, 8);
  const __m128i v = _mm_unpacklo_epi8(_mm_cvtsi64_si128(ea), _mm_cvtsi64_si128(eb));
  return is_signed ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}
inline __m256 Halves(const uint16_t* h) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

inline void Unpack(const Q4Kx8Block& block, Unpacked& u) {
  const __m512i low = _mm512_set1_epi8(0x0f);
  for (int p = 0; p < 4; ++p) {
    for (int t = 0; t < 4; ++t) {
      const __m512i raw = _mm512_loadu_si512(block.qs[p] + 64 * t);
      u.q[2 * p][t] = _mm512_and_si512(raw, low);
      u.q[2 * p + 1][t] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
    }
  }
  for (int j = 0; j < 8; ++j) {
    u.scales[j] = SpreadScales(block.scales[j], false);
    u.offsets[j] = Pairs(block.mins[j], block.mins[j], false);
  }
  u.d = Halves(block.d);
  u.offset_d = Halves(block.dmin);
}

inline void Unpack(const Q6Kx8Block& block, Unpacked& u) {
  const __m512i low = _mm512_set1_epi8(0x0f), top = _mm512_set1_epi8(0x30);
  for (int j = 0; j < 8; ++j) {
    for (int t = 0; t < 4; ++t) {
      const __m512i l = _mm512_loadu_si512(block.low[j / 2] + 64 * t);
      const __m512i h = _mm512_loadu_si512(block.high[j / 4] + 64 * t);
      const __m512i bits03 = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(l, 4) : l, low);
      // Bits 2f, 2f + 1 of `h` to bits 4 and 5 (f = j % 4).
      const int f = j % 4;
      const __m512i placed = f == 0   ? _mm512_slli_epi16(h, 4)
                             : f == 1 ? _mm512_slli_epi16(h, 2)
                             : f == 2 ? h
                                      : _mm512_srli_epi16(h, 2);
      u.q[j][t] = _mm512_or_si512(bits03, _mm512_and_si512(placed, top));
    }
  }
  for (int g = 0; g < 16; ++g) u.scales[g] = SpreadScales(block.scales[g], true);
  for (int j = 0; j < 8; ++j) {
    u.offsets[j] = Pairs(block.scales[2 * j], block.scales[2 * j + 1], true);
  }
  u.d = Halves(block.d);
  u.offset_d = _mm256_mul_ps(u.d, _mm256_set1_ps(32.0f));
}

// Σ q·x of 32 weights of eight rows (lanes 2r and 2r + 1 for row r): vectors t0 … t1 − 1, each
// against the eight activation bytes its rows hold, broadcast.
template <int t0, int t1>
inline __m512i Dots(const __m512i (&q)[4], const int8_t* x) {
  __m512i dot = _mm512_setzero_si512();
  for (int t = t0; t < t1; ++t) {
    int64_t eight;
    std::memcpy(&eight, x + 8 * t, 8);
    dot = _mm512_dpbusd_epi32(dot, q[t], _mm512_set1_epi64(eight));
  }
  return dot;
}

// Σ scale·Σ q·x over sub-block j's 32 weights, per row (Q4_K: one scale; Q6_K: one per 16).
// Bounds: Q4_K 8·63·32·15·127, Q6_K 16·128·16·63·127, both < 2^31.
inline __m512i Scaled(const Q4Kx8Block*, const Unpacked& u, int j, const int8_t* x) {
  return _mm512_mullo_epi32(Dots<0, 4>(u.q[j], x), u.scales[j]);
}
inline __m512i Scaled(const Q6Kx8Block*, const Unpacked& u, int j, const int8_t* x) {
  return _mm512_add_epi32(_mm512_mullo_epi32(Dots<0, 2>(u.q[j], x), u.scales[2 * j]),
                          _mm512_mullo_epi32(Dots<2, 4>(u.q[j], x), u.scales[2 * j + 1]));
}

// Super-block b's products for activation rows x[0, R) added into their sums. Sub-block by
// sub-block, so that its weights are loaded once into registers for all R rows.
template <int R, typename Block>
inline void RowsTimesBlock(const Unpacked& u, const Q8KRow* x, int64_t b, __m256 (&acc)[R],
                           __m256 (&offset)[R]) {
  __m512i total[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) total[r] = _mm512_setzero_si512();
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      total[r] = _mm512_add_epi32(
          total[r], Scaled(static_cast<const Block*>(nullptr), u, j, x[r].q + 256 * b + 32 * j));
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const int16_t* sums = x[r].sums + 16 * b;
    __m256i offset_sum = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      int32_t pair;  // Σq over sub-block j's two groups of 16.
      std::memcpy(&pair, sums + 2 * j, 4);
      offset_sum = _mm256_dpwssd_epi32(offset_sum, u.offsets[j], _mm256_set1_epi32(pair));
    }
    // Row r's two lanes added in the low half of qword r, the qwords narrowed to rows 0 … 7.
    const __m256i rows8 =
        _mm512_cvtepi64_epi32(_mm512_add_epi32(total[r], _mm512_srli_epi64(total[r], 32)));
    const __m256 dx = _mm256_set1_ps(x[r].d[b]);
    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(rows8), _mm256_mul_ps(u.d, dx), acc[r]);
    offset[r] =
        _mm256_fmadd_ps(_mm256_cvtepi32_ps(offset_sum), _mm256_mul_ps(u.offset_d, dx), offset[r]);
  }
}

// Activation rows x[0, R) against one group of eight weight rows.
template <int R, typename Block>
void Group(const Block* w, int64_t blocks, const Q8KRow* x, float* out, int64_t out_stride) {
  __m256 acc[R], offset[R];
  for (int r = 0; r < R; ++r) acc[r] = offset[r] = _mm256_setzero_ps();
  Unpacked u;
  for (int64_t b = 0; b < blocks; ++b) {
    // Two super-blocks ahead (into the next group at the end: groups are consecutive).
    const char* ahead = reinterpret_cast<const char*>(w + b + 2);
    for (size_t line = 0; line < sizeof(Block); line += 64) _mm_prefetch(ahead + line, _MM_HINT_T0);
    Unpack(w[b], u);
    RowsTimesBlock<R, Block>(u, x, b, acc, offset);
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(out + r * out_stride, _mm256_sub_ps(acc[r], offset[r]));
  }
}

template <typename Block>
void Range(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  using GroupFn = void (*)(const Block*, int64_t, const Q8KRow*, float*, int64_t);
  static constexpr GroupFn kGroups[kRows + 1] = {nullptr,         Group<1, Block>, Group<2, Block>,
                                                 Group<3, Block>, Group<4, Block>, Group<5, Block>,
                                                 Group<6, Block>, Group<7, Block>, Group<8, Block>};
  const Block* w = static_cast<const Block*>(p.w);
  const int64_t blocks = p.rows[0].blocks;
  for (int64_t n = n_begin; n < n_end; n += 8) {
    for (int64_t m0 = 0; m0 < p.m; m0 += kRows) {
      kGroups[std::min<int64_t>(kRows, p.m - m0)](w + (n / 8) * blocks, blocks, p.rows + m0,
                                                  p.out + m0 * p.out_stride + n, p.out_stride);
    }
  }
}

}  // namespace

void RepackedKQuantDotRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  if (p.w_type == WeightType::kQ6Kx8) return Range<Q6Kx8Block>(p, n_begin, n_end);
  Range<Q4Kx8Block>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::avx512vnni
