#include "kernels/quant_matmul.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "base/bf16.h"
#include "kernels/cpu_simd.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_chunks.h"
#include "kernels/thread_pool.h"

namespace arbor::kernels {
namespace {

constexpr int kMaxRows = 8;  // Rows of x sharing one widened chunk (14 of 16 AVX2 registers).
constexpr int kHalf = kQuantBlock / 2;

// Scales of Q6_K differ between the halves of a chunk; every other type has one per chunk.
template <typename Block>
constexpr bool kSplitScales = std::is_same_v<Block, BlockQ6_K>;

#ifdef ARBOR_CPU_AVX2
// A chunk widened into registers: q_j as four vectors of 8 floats, s and o per half.
struct WideChunk {
  __m256 q[4];
  float s[2];
  float o[2];
};

// 32 unsigned bytes (signed when `is_signed`) as four vectors of floats.
inline void Widen32(__m256i bytes, bool is_signed, __m256 (&q)[4]) {
  const __m128i lo = _mm256_castsi256_si128(bytes), hi = _mm256_extracti128_si256(bytes, 1);
  const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
  for (int i = 0; i < 4; ++i) {
    q[i] = _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(parts[i])
                                        : _mm256_cvtepu8_epi32(parts[i]));
  }
}

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

// Bits `shift`, `shift`+1 (`width` bits) of 32 bytes, moved to bit 4 (and 5).
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

inline void SetAffine(WideChunk& w, float s, float o) {
  w.s[0] = w.s[1] = s;
  w.o[0] = w.o[1] = o;
}

inline void WidenChunk(const BlockQ8_0& b, int, WideChunk& w) {
  Widen32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)), true, w.q);
  SetAffine(w, base::HalfToFloat(b.d), 0.0f);
}
inline void WidenChunk(const BlockQ4_0& b, int, WideChunk& w) {
  Widen32(Nibbles16(b.qs), false, w.q);
  const float d = base::HalfToFloat(b.d);
  SetAffine(w, d, -8.0f * d);
}
inline void WidenChunk(const BlockQ4_1& b, int, WideChunk& w) {
  Widen32(Nibbles16(b.qs), false, w.q);
  SetAffine(w, base::HalfToFloat(b.d), base::HalfToFloat(b.m));
}
inline void WidenChunk(const BlockQ5_0& b, int, WideChunk& w) {
  Widen32(_mm256_or_si256(Nibbles16(b.qs), FifthBits(b.qh)), false, w.q);
  const float d = base::HalfToFloat(b.d);
  SetAffine(w, d, -16.0f * d);
}
inline void WidenChunk(const BlockQ5_1& b, int, WideChunk& w) {
  Widen32(_mm256_or_si256(Nibbles16(b.qs), FifthBits(b.qh)), false, w.q);
  SetAffine(w, base::HalfToFloat(b.d), base::HalfToFloat(b.m));
}
template <typename Block>
inline void AffineK(const Block& b, int c, WideChunk& w) {
  int scale = 0, min = 0;
  ScaleMinK4(c, b.scales, &scale, &min);
  SetAffine(w, base::HalfToFloat(b.d) * static_cast<float>(scale),
            -(base::HalfToFloat(b.dmin) * static_cast<float>(min)));
}
inline void WidenChunk(const BlockQ4_K& b, int c, WideChunk& w) {
  Widen32(Nibbles32(b.qs + kQuantBlock * (c / 2), c & 1), false, w.q);
  AffineK(b, c, w);
}
inline void WidenChunk(const BlockQ5_K& b, int c, WideChunk& w) {
  const __m256i low = Nibbles32(b.qs + kQuantBlock * (c / 2), c & 1);
  Widen32(_mm256_or_si256(low, HighBits(b.qh, c, 1)), false, w.q);
  AffineK(b, c, w);
}
inline void WidenChunk(const BlockQ6_K& b, int c, WideChunk& w) {
  const int n = c / 4, r = c % 4;
  const __m256i low = Nibbles32(b.ql + 64 * n + 32 * (r & 1), r >= 2);
  const __m256i q = _mm256_or_si256(low, HighBits(b.qh + 32 * n, 2 * r, 3));
  Widen32(_mm256_sub_epi8(q, _mm256_set1_epi8(32)), true, w.q);
  const float d = base::HalfToFloat(b.d);
  for (int h = 0; h < 2; ++h) {
    w.s[h] = d * static_cast<float>(b.scales[8 * n + 2 * r + h]);
    w.o[h] = 0.0f;
  }
}

// Rows [0, R) of x against one weight row of `blocks` blocks; xsum holds Σ x per 16 weights.
template <int R, typename Block>
void RowDot(const Block* w, int64_t blocks, const float* const* x, const float* const* xsum,
            float* out) {
  constexpr int kChunks = ChunkTraits<Block>::kChunks;
  __m256 acc[R];
  float offset[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    offset[r] = 0.0f;
  }
  WideChunk chunk;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int c = 0; c < kChunks; ++c) {
      WidenChunk(w[b], c, chunk);
      const int64_t at = (b * kChunks + c) * kQuantBlock;
      const __m256 s0 = _mm256_set1_ps(chunk.s[0]);
      for (int r = 0; r < R; ++r) {
        const float* xc = x[r] + at;
        const float* sums = xsum[r] + at / kHalf;
        __m256 lo = _mm256_mul_ps(chunk.q[0], _mm256_loadu_ps(xc));
        lo = _mm256_fmadd_ps(chunk.q[1], _mm256_loadu_ps(xc + 8), lo);
        __m256 hi = _mm256_mul_ps(chunk.q[2], _mm256_loadu_ps(xc + 16));
        hi = _mm256_fmadd_ps(chunk.q[3], _mm256_loadu_ps(xc + 24), hi);
        if constexpr (kSplitScales<Block>) {
          acc[r] = _mm256_fmadd_ps(s0, lo, acc[r]);
          acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(chunk.s[1]), hi, acc[r]);
          offset[r] += chunk.o[0] * sums[0] + chunk.o[1] * sums[1];
        } else {
          acc[r] = _mm256_fmadd_ps(s0, _mm256_add_ps(lo, hi), acc[r]);
          offset[r] += chunk.o[0] * (sums[0] + sums[1]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = simd::HorizontalSum(acc[r]) + offset[r];
}
#else
template <int R, typename Block>
void RowDot(const Block* w, int64_t blocks, const float* const* x, const float* const* xsum,
            float* out) {
  using Traits = ChunkTraits<Block>;
  float acc[R] = {}, offset[R] = {};
  Chunk chunk;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int c = 0; c < Traits::kChunks; ++c) {
      Traits::Load(w[b], c, chunk);
      const int64_t at = (b * Traits::kChunks + c) * kQuantBlock;
      for (int r = 0; r < R; ++r) {
        for (int h = 0; h < 2; ++h) {
          float dot = 0.0f;
          for (int j = h * kHalf; j < (h + 1) * kHalf; ++j) dot += chunk.q[j] * x[r][at + j];
          acc[r] += chunk.s[h] * dot;
          offset[r] += chunk.o[h] * xsum[r][at / kHalf + h];
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = acc[r] + offset[r];
}
#endif

// RowDot for 1 to kMaxRows rows, indexed by rows − 1.
template <typename Block, int... R>
constexpr auto MakeRowDots(std::integer_sequence<int, R...>) {
  using Fn = void (*)(const Block*, int64_t, const float* const*, const float* const*, float*);
  return std::array<Fn, sizeof...(R)>{&RowDot<R + 1, Block>...};
}
template <typename Block>
constexpr auto kRowDots = MakeRowDots<Block>(std::make_integer_sequence<int, kMaxRows>());

// Output features [n_begin, n_end) for every row of x, up to kMaxRows rows per pass over a
// weight row.
template <typename Block>
void Range(const MatmulParams& p, const std::vector<float>& xsum, int64_t n_begin, int64_t n_end) {
  const int64_t blocks = p.k / (int64_t{ChunkTraits<Block>::kChunks} * kQuantBlock);
  const int64_t halves = p.k / kHalf;
  const Block* w = static_cast<const Block*>(p.w);
  for (int64_t m0 = 0; m0 < p.m; m0 += kMaxRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kMaxRows, p.m - m0));
    const float* x[kMaxRows];
    const float* sums[kMaxRows];
    for (int r = 0; r < rows; ++r) {
      x[r] = p.x + (m0 + r) * p.x_stride;
      sums[r] = xsum.data() + (m0 + r) * halves;
    }
    for (int64_t n = n_begin; n < n_end; ++n) {
      float out[kMaxRows];
      kRowDots<Block>[rows - 1](w + n * blocks, blocks, x, sums, out);
      for (int r = 0; r < rows; ++r) p.out[(m0 + r) * p.out_stride + n] = out[r];
    }
  }
}

}  // namespace

void QuantMatmul(const MatmulParams& p, ThreadPool* pool) {
  if (p.m == 0 || p.n == 0) return;
  // Σ x_j per row and 16 weights: the offset term (o·Σ x) of every chunk of every weight row.
  const int64_t halves = p.k / kHalf;
  std::vector<float> xsum(p.m * halves);
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t h = 0; h < halves; ++h) {
      const float* xh = p.x + i * p.x_stride + h * kHalf;
      float sum = 0.0f;
      for (int j = 0; j < kHalf; ++j) sum += xh[j];
      xsum[i * halves + h] = sum;
    }
  }
  auto run = [&](int64_t begin, int64_t end) {
    switch (p.w_type) {
      case WeightType::kQ8_0:
        return Range<BlockQ8_0>(p, xsum, begin, end);
      case WeightType::kQ4_0:
        return Range<BlockQ4_0>(p, xsum, begin, end);
      case WeightType::kQ4_1:
        return Range<BlockQ4_1>(p, xsum, begin, end);
      case WeightType::kQ5_0:
        return Range<BlockQ5_0>(p, xsum, begin, end);
      case WeightType::kQ5_1:
        return Range<BlockQ5_1>(p, xsum, begin, end);
      case WeightType::kQ4_K:
        return Range<BlockQ4_K>(p, xsum, begin, end);
      case WeightType::kQ5_K:
        return Range<BlockQ5_K>(p, xsum, begin, end);
      default:
        return Range<BlockQ6_K>(p, xsum, begin, end);
    }
  };
  if (pool == nullptr) return run(0, p.n);
  // ~64k multiply-adds per hand-off, as the float matmul.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, p.m * p.k));
  pool->ParallelFor(p.n, grain, run);
}

}  // namespace arbor::kernels
