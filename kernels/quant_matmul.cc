#include "kernels/quant_matmul.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "base/bf16.h"
#include "kernels/cpu_simd.h"
#include "kernels/quant_blocks.h"
#include "kernels/thread_pool.h"

namespace arbor::kernels {
namespace {

constexpr int kMaxRows = 8;  // Rows of x sharing one widened block (13 of 16 AVX2 registers).

// A block's scale and offset: w_j = d·q_j + m.
struct Affine {
  float d;
  float m;
};

inline Affine AffineOf(const BlockQ8_0& b) { return {base::HalfToFloat(b.d), 0.0f}; }
inline Affine AffineOf(const BlockQ4_0& b) {
  const float d = base::HalfToFloat(b.d);
  return {d, -8.0f * d};
}
inline Affine AffineOf(const BlockQ4_1& b) {
  return {base::HalfToFloat(b.d), base::HalfToFloat(b.m)};
}

#ifdef ARBOR_CPU_AVX2
// The block's 32 integers q_j as four vectors of 8 floats, in weight order.
inline void Widen(const BlockQ8_0& b, __m256 (&q)[4]) {
  for (int i = 0; i < 4; ++i) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * i));
    q[i] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
  }
}
inline void WidenNibbles(const uint8_t* qs, __m256 (&q)[4]) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i mask = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_and_si128(packed, mask);                     // Weights 0..15.
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), mask);  // Weights 16..31.
  q[0] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo));
  q[1] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)));
  q[2] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi));
  q[3] = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)));
}
inline void Widen(const BlockQ4_0& b, __m256 (&q)[4]) { WidenNibbles(b.qs, q); }
inline void Widen(const BlockQ4_1& b, __m256 (&q)[4]) { WidenNibbles(b.qs, q); }

// Rows [0, R) of x (x[r] at block b) against one weight row.
template <int R, typename Block>
void RowDot(const Block* w, int64_t blocks, const float* const* x, const float* const* xsum,
            float* out) {
  __m256 acc[R];
  float offset[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    offset[r] = 0.0f;
  }
  for (int64_t b = 0; b < blocks; ++b) {
    __m256 q[4];
    Widen(w[b], q);
    const Affine a = AffineOf(w[b]);
    const __m256 d = _mm256_set1_ps(a.d);
    for (int r = 0; r < R; ++r) {
      const float* xb = x[r] + b * kQuantBlock;
      __m256 dot = _mm256_mul_ps(q[0], _mm256_loadu_ps(xb));
      dot = _mm256_fmadd_ps(q[1], _mm256_loadu_ps(xb + 8), dot);
      dot = _mm256_fmadd_ps(q[2], _mm256_loadu_ps(xb + 16), dot);
      dot = _mm256_fmadd_ps(q[3], _mm256_loadu_ps(xb + 24), dot);
      acc[r] = _mm256_fmadd_ps(d, dot, acc[r]);
      offset[r] += a.m * xsum[r][b];
    }
  }
  for (int r = 0; r < R; ++r) out[r] = simd::HorizontalSum(acc[r]) + offset[r];
}
#else
// The block's integer q_j.
inline float IntAt(const BlockQ8_0& b, int j) { return b.qs[j]; }
inline float NibbleAt(const uint8_t* qs, int j) {
  return j < kQuantBlock / 2 ? qs[j] & 0x0f : qs[j - kQuantBlock / 2] >> 4;
}
inline float IntAt(const BlockQ4_0& b, int j) { return NibbleAt(b.qs, j); }
inline float IntAt(const BlockQ4_1& b, int j) { return NibbleAt(b.qs, j); }

template <int R, typename Block>
void RowDot(const Block* w, int64_t blocks, const float* const* x, const float* const* xsum,
            float* out) {
  float acc[R] = {}, offset[R] = {};
  float q[kQuantBlock];
  for (int64_t b = 0; b < blocks; ++b) {
    const Affine a = AffineOf(w[b]);
    for (int j = 0; j < kQuantBlock; ++j) q[j] = IntAt(w[b], j);
    for (int r = 0; r < R; ++r) {
      float dot = 0.0f;
      for (int j = 0; j < kQuantBlock; ++j) dot += q[j] * x[r][b * kQuantBlock + j];
      acc[r] += a.d * dot;
      offset[r] += a.m * xsum[r][b];
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
  const int64_t blocks = p.k / kQuantBlock;
  const Block* w = static_cast<const Block*>(p.w);
  for (int64_t m0 = 0; m0 < p.m; m0 += kMaxRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kMaxRows, p.m - m0));
    const float* x[kMaxRows];
    const float* sums[kMaxRows];
    for (int r = 0; r < rows; ++r) {
      x[r] = p.x + (m0 + r) * p.x_stride;
      sums[r] = xsum.data() + (m0 + r) * blocks;
    }
    for (int64_t n = n_begin; n < n_end; ++n) {
      float out[kMaxRows];
      const Block* row = w + n * blocks;
      kRowDots<Block>[rows - 1](row, blocks, x, sums, out);
      for (int r = 0; r < rows; ++r) p.out[(m0 + r) * p.out_stride + n] = out[r];
    }
  }
}

}  // namespace

void QuantMatmul(const MatmulParams& p, ThreadPool* pool) {
  if (p.m == 0 || p.n == 0) return;
  const int64_t blocks = p.k / kQuantBlock;
  // Σ x_j per row and block: the m·Σ x_j term of every block of every weight row.
  std::vector<float> xsum(p.m * blocks);
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* xb = p.x + i * p.x_stride + b * kQuantBlock;
      float sum = 0.0f;
      for (int j = 0; j < kQuantBlock; ++j) sum += xb[j];
      xsum[i * blocks + b] = sum;
    }
  }
  auto run = [&](int64_t begin, int64_t end) {
    switch (p.w_type) {
      case WeightType::kQ8_0:
        return Range<BlockQ8_0>(p, xsum, begin, end);
      case WeightType::kQ4_0:
        return Range<BlockQ4_0>(p, xsum, begin, end);
      default:
        return Range<BlockQ4_1>(p, xsum, begin, end);
    }
  };
  if (pool == nullptr) return run(0, p.n);
  // ~64k multiply-adds per hand-off, as the float matmul.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, p.m * p.k));
  pool->ParallelFor(p.n, grain, run);
}

}  // namespace arbor::kernels
