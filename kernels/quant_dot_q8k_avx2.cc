// Q4_K and Q6_K rows against per-256 activations (q8k_activations.h) on AVX2. Per 32-weight chunk,
// maddubs multiplies the unsigned weight integers (Q4_K: 0..15, Q6_K: 0..63) by the 8-bit
// activations into 16-bit pairs (at most 2·63·127: no saturation) and madd multiplies those by the
// chunk's sub-block scales (Q4_K: one 6-bit scale; Q6_K: a signed 8-bit one per 16 weights) into
// 32-bit sums. A super-block's sums are integers, converted to float once and scaled by d_x·d;
// the weights' offsets subtract d_x·(dmin·Σ m_j·Σq_j) for Q4_K's minimums and d_x·d·32·Σ sc_k·Σq_k
// for Q6_K's zero point 32, from the activations' sums per 16. Each weight super-block serves
// every row of the call (at most kQ8KMaxRows).
//
// Compiled with AVX2, FMA and F16C only (kernels/CMakeLists.txt), in namespace avx2 as the other
// AVX2 kernels, whose chunk loaders it shares (quant_chunk_bytes.h says why each instruction set
// keeps its own namespace).
#define ARBOR_QUANT_ISA_NS avx2
#include "kernels/quant_chunk_bytes.h"
#include "kernels/quant_dot.h"
#include "kernels/quant_matmul.h"

namespace arbor::kernels::avx2 {
namespace {

float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// Σ over a chunk's 32 products of weight integer × activation, times the chunk's scales: the 16
// pairs of maddubs cover weights 0–15 in the low 128 bits and 16–31 in the high ones, so a scale
// per 16 weights is a vector of two halves.
__m256i ScaledDot(__m256i weights, const int8_t* x, __m256i scales) {
  const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
  return _mm256_madd_epi16(_mm256_maddubs_epi16(weights, xv), scales);
}

// A super-block's integer sums (per 8 lanes) for every row, and its float parts.
template <int R>
struct SuperBlockSums {
  __m256i dot[R];
  float scale = 0.0f;    // d: multiplies the integer sums (and d_x, per row).
  float offset[R] = {};  // In units of d_x: subtracted.
};

template <int R>
void Accumulate(const Q8KRow* rows, int64_t b, const SuperBlockSums<R>& s, __m256* acc,
                float* offsets) {
  for (int r = 0; r < R; ++r) {
    const float dx = rows[r].d[b];
    acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s.dot[r]), _mm256_set1_ps(dx * s.scale), acc[r]);
    offsets[r] += dx * s.offset[r];
  }
}

template <int R>
SuperBlockSums<R> SuperBlock(const BlockQ4_K& block, const Q8KRow* rows, int64_t b) {
  SuperBlockSums<R> s;
  int scale[8], min[8];
  for (int j = 0; j < 8; ++j) ScaleMinK4(j, block.scales, &scale[j], &min[j]);
  for (int r = 0; r < R; ++r) s.dot[r] = _mm256_setzero_si256();
  for (int c = 0; c < 8; ++c) {  // Chunks 2p and 2p+1 share 32 bytes of nibbles.
    const __m256i weights = Nibbles32(block.qs + 32 * (c / 2), c & 1);
    const __m256i scales = _mm256_set1_epi16(static_cast<int16_t>(scale[c]));
    for (int r = 0; r < R; ++r) {
      s.dot[r] =
          _mm256_add_epi32(s.dot[r], ScaledDot(weights, rows[r].q + 256 * b + 32 * c, scales));
    }
  }
  s.scale = Half(block.d);
  const float dmin = Half(block.dmin);
  for (int r = 0; r < R; ++r) {
    const int16_t* sums = rows[r].sums + 16 * b;
    int mins = 0;
    for (int j = 0; j < 8; ++j) mins += min[j] * (sums[2 * j] + sums[2 * j + 1]);
    s.offset[r] = dmin * static_cast<float>(mins);
  }
  return s;
}

template <int R>
SuperBlockSums<R> SuperBlock(const BlockQ6_K& block, const Q8KRow* rows, int64_t b) {
  SuperBlockSums<R> s;
  for (int r = 0; r < R; ++r) s.dot[r] = _mm256_setzero_si256();
  for (int c = 0; c < 8; ++c) {  // Chunk c is group g of half n (as LoadChunk reads it).
    const int n = c / 4, g = c % 4;
    const __m256i weights = _mm256_or_si256(Nibbles32(block.ql + 64 * n + 32 * (g & 1), g >= 2),
                                            HighBits(block.qh + 32 * n, 2 * g, 3));
    const __m256i scales = _mm256_set_m128i(_mm_set1_epi16(block.scales[8 * n + 2 * g + 1]),
                                            _mm_set1_epi16(block.scales[8 * n + 2 * g]));
    for (int r = 0; r < R; ++r) {
      s.dot[r] =
          _mm256_add_epi32(s.dot[r], ScaledDot(weights, rows[r].q + 256 * b + 32 * c, scales));
    }
  }
  s.scale = Half(block.d);
  for (int r = 0; r < R; ++r) {
    const int16_t* sums = rows[r].sums + 16 * b;
    int zero_point = 0;  // Σ_k sc_k · 32 · Σq_k: the weights are sc·(q − 32).
    for (int k = 0; k < 16; ++k) zero_point += block.scales[k] * sums[k];
    s.offset[r] = s.scale * 32.0f * static_cast<float>(zero_point);
  }
  return s;
}

// One weight row (`blocks` super-blocks) against rows[0..R).
template <int R, typename Block>
void RowDots(const Block* w, const Q8KRow* rows, int64_t blocks, float* out) {
  __m256 acc[R];
  float offsets[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm256_setzero_ps();
    offsets[r] = 0.0f;
  }
  for (int64_t b = 0; b < blocks; ++b)
    Accumulate<R>(rows, b, SuperBlock<R>(w[b], rows, b), acc, offsets);
  for (int r = 0; r < R; ++r) out[r] = HorizontalSum(acc[r]) - offsets[r];
}

template <typename Block>
void Range(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  const int64_t blocks = p.rows[0].blocks;
  const Block* w = static_cast<const Block*>(p.w);
  for (int64_t n = n_begin; n < n_end; ++n) {
    if (n + 2 < n_end) {  // The row after next, as the other kernels (quant_dot_kernel.h).
      const char* next = reinterpret_cast<const char*>(w + (n + 2) * blocks);
      for (int64_t b = 0; b < blocks * int64_t{sizeof(Block)}; b += 64) {
        _mm_prefetch(next + b, _MM_HINT_T0);
      }
    }
    float out[kQ8KMaxRows];
    switch (p.m) {
      case 1:
        RowDots<1>(w + n * blocks, p.rows, blocks, out);
        break;
      case 2:
        RowDots<2>(w + n * blocks, p.rows, blocks, out);
        break;
      default:
        RowDots<3>(w + n * blocks, p.rows, blocks, out);
    }
    for (int64_t r = 0; r < p.m; ++r) p.out[r * p.out_stride + n] = out[r];
  }
}

}  // namespace

void KQuantDotQ8KRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  if (p.w_type == WeightType::kQ6_K) return Range<BlockQ6_K>(p, n_begin, n_end);
  Range<BlockQ4_K>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::avx2
