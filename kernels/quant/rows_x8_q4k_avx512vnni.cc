// The kernel of Q4_K rows repacked eight at a time (WeightType::kQ4Kx8, rows_x8.h) against
// per-256 activations (q8k_activations.h), for AVX-512 with VNNI. Compiled with those extensions
// only (kernels/CMakeLists.txt).
//
// Why a layout of its own: the file's Q4_K kernel (quant_dot_q8k_kernel.h) decodes each weight
// row's nibbles and 6-bit scales once per group of activation rows and multiplies one weight row
// at a time (maddubs, then madd by the sub-block's scale); in a 256-token prefill or a step of
// 32 siblings that decoding and the two-instruction products bound it. Here a super-block's
// eight rows are unpacked once into a buffer, and each activation row takes four vpdpbusd per
// sub-block for all eight weight rows, one integer multiply by the eight rows' scales, and one
// conversion per super-block.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/quant/quant_dot.h"
#include "kernels/quant/rows_x8.h"

namespace arbor::kernels::avx512vnni {
namespace {

constexpr int kRows = 8;  // Activation rows per pass over a group's super-block.

// A group's super-block as the per-row loop reads it: weights as bytes, scales per lane.
struct Unpacked {
  __m512i q[8][4];       // Sub-block j, vector t: weights 8t … 8t + 7 of every row (rows_x8.h).
  __m512i scales[8];     // Sub-block j's scales, lane l for row l % 8.
  __m256i mins[8];       // Sub-block j's minimums as int16 pairs (m, m), pair r for row r.
  __m256 d, dmin;
};

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
    int64_t scales, mins;
    std::memcpy(&scales, block.scales[j], 8);
    std::memcpy(&mins, block.mins[j], 8);
    u.scales[j] = _mm512_cvtepu8_epi32(_mm_set1_epi64x(scales));
    const __m128i m = _mm_cvtsi64_si128(mins);
    u.mins[j] = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m, m));
  }
  u.d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block.d)));
  u.dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block.dmin)));
}

// Activation row x's products with super-block b of the eight rows, added into its sums.
inline void RowTimesBlock(const Unpacked& u, const Q8KRow& x, int64_t b, __m256& acc,
                          __m256& offset) {
  const __m512i spread[4] = {_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                             _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3),
                             _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5),
                             _mm512_setr_epi32(6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7)};
  const int8_t* q = x.q + 256 * b;
  const int16_t* sums = x.sums + 16 * b;
  __m512i total = _mm512_setzero_si512();
  __m256i mins = _mm256_setzero_si256();
  for (int j = 0; j < 8; ++j) {
    const __m512i xv = _mm512_castsi256_si512(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * j)));
    __m512i dot = _mm512_setzero_si512();
    for (int t = 0; t < 4; ++t) {
      dot = _mm512_dpbusd_epi32(dot, u.q[j][t], _mm512_permutexvar_epi32(spread[t], xv));
    }
    // Σ sc·Σ q·x per row: at most 8·63·32·15·127 < 2^31.
    total = _mm512_add_epi32(total, _mm512_mullo_epi32(dot, u.scales[j]));
    int32_t pair;  // Σq over the sub-block's two halves of 16.
    std::memcpy(&pair, sums + 2 * j, 4);
    mins = _mm256_dpwssd_epi32(mins, u.mins[j], _mm256_set1_epi32(pair));
  }
  const __m256i rows8 =
      _mm256_add_epi32(_mm512_castsi512_si256(total), _mm512_extracti64x4_epi64(total, 1));
  const __m256 dx = _mm256_set1_ps(x.d[b]);
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(rows8), _mm256_mul_ps(u.d, dx), acc);
  offset = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_mul_ps(u.dmin, dx), offset);
}

// Activation rows x[0, R) against one group of eight weight rows. Each row's sums take the same
// operations in the same order whatever rows share the pass.
template <int R>
void Group(const Q4Kx8Block* w, int64_t blocks, const Q8KRow* x, float* out,
           int64_t out_stride) {
  __m256 acc[R], offset[R];
  for (int r = 0; r < R; ++r) acc[r] = offset[r] = _mm256_setzero_ps();
  Unpacked u;
  for (int64_t b = 0; b < blocks; ++b) {
    // Two super-blocks ahead (into the next group at the end: groups are consecutive).
    const char* ahead = reinterpret_cast<const char*>(w + b + 2);
    for (size_t line = 0; line < sizeof(Q4Kx8Block); line += 64) {
      _mm_prefetch(ahead + line, _MM_HINT_T0);
    }
    Unpack(w[b], u);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) RowTimesBlock(u, x[r], b, acc[r], offset[r]);
  }
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(out + r * out_stride, _mm256_sub_ps(acc[r], offset[r]));
  }
}

}  // namespace

void Q4Kx8DotRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  using GroupFn = void (*)(const Q4Kx8Block*, int64_t, const Q8KRow*, float*, int64_t);
  static constexpr GroupFn kGroups[kRows + 1] = {nullptr,  Group<1>, Group<2>, Group<3>, Group<4>,
                                                 Group<5>, Group<6>, Group<7>, Group<8>};
  const Q4Kx8Block* w = static_cast<const Q4Kx8Block*>(p.w);
  const int64_t blocks = p.rows[0].blocks;
  for (int64_t n = n_begin; n < n_end; n += 8) {
    for (int64_t m0 = 0; m0 < p.m; m0 += kRows) {
      kGroups[std::min<int64_t>(kRows, p.m - m0)](w + (n / 8) * blocks, blocks, p.rows + m0,
                                                  p.out + m0 * p.out_stride + n, p.out_stride);
    }
  }
}

}  // namespace arbor::kernels::avx512vnni
