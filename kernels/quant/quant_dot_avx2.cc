// The quantized matmul's 8-bit-activation kernels for AVX2 (+FMA, F16C), compiled with exactly
// those extensions whatever the rest of the build targets (kernels/CMakeLists.txt), and the
// vector activation quantizer every instruction set shares.
#define ARBOR_QUANT_ISA_NS avx2
#include <utility>

#include "kernels/quant/quant_dot_kernel.h"
#include "kernels/quant/quant_dot_q8k_kernel.h"
#include "kernels/quant/quant_matmul.h"
#include "kernels/quant/repacked_kquant_ymm_kernel.h"
#include "kernels/quant/repacked_ymm_kernel.h"

namespace arbor::kernels::avx2 {
namespace {

// maddubs (u8·s8 pairs to 16 bits) then madd with ones (pairs to 32 bits).
struct Isa : Ymm {
  static VI Dot(VI u8, VI s8) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1));
  }
  static VI DotSigned(const Signed& w, VI x) {
    return Dot(w.magnitude, _mm256_sign_epi8(x, w.sign));
  }
  static constexpr int kQ8KRows = kQ8KMaxRows;  // The per-256 kernel's rows per pass.
};

}  // namespace

void Q8DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  DotRange<Isa>(p, n_begin, n_end);
}

void KQuantDotQ8KRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  q8k::KQuantRange<Isa>(p, n_begin, n_end);
}

void RepackedDotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  repacked::DotRange</*kVnni=*/false>(p, n_begin, n_end);
}

void RepackedKQuantDotRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  kquant::DotRange</*kVnni=*/false>(p, n_begin, n_end);
}

namespace {

// The largest |x| of 8·n floats.
[[gnu::always_inline]] inline float AbsMax(const float* x, int n) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_setzero_ps();
  for (int i = 0; i < n; ++i) {
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_bit, _mm256_loadu_ps(x + 8 * i)));
  }
  const __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  const __m128 m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  return _mm_cvtss_f32(_mm_max_ss(m2, _mm_shuffle_ps(m2, m2, 1)));
}

// The reciprocal of step d that the scalar quantizers multiply by (0 for d = 0).
__m256 Inverse(float d) { return _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f); }

// 32 floats times `inverse`, rounded half to even as nearbyint, to bytes at q; returns Σq of
// values 0–15 and 16–31.
[[gnu::always_inline]] inline std::pair<int, int> Quantize32(const float* x, __m256 inverse,
                                                             int8_t* q) {
  __m256i v[4];
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), inverse));
  }
  // Pack 32-bit lanes to bytes; the packs work within 128-bit halves, so restore the order.
  const __m256i words01 = _mm256_packs_epi32(v[0], v[1]);
  const __m256i words23 = _mm256_packs_epi32(v[2], v[3]);
  const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(words01, words23),
                                                    _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), bytes);
  // Σq per 16 from the bytes: each + 128 as unsigned, summed in eights by vpsadbw.
  const __m256i eights =
      _mm256_sad_epu8(_mm256_xor_si256(bytes, _mm256_set1_epi8(-128)), _mm256_setzero_si256());
  const __m128i low = _mm256_castsi256_si128(eights), high = _mm256_extracti128_si256(eights, 1);
  const int sum0 = _mm_cvtsi128_si32(_mm_add_epi64(low, _mm_unpackhi_epi64(low, low)));
  const int sum1 = _mm_cvtsi128_si32(_mm_add_epi64(high, _mm_unpackhi_epi64(high, high)));
  return {sum0 - 16 * 128, sum1 - 16 * 128};
}

}  // namespace

void QuantizeQ8Rows(const float* x, int64_t x_stride, int64_t row_begin, int64_t row_end,
                    const Q8Rows& out) {
  for (int64_t row = row_begin; row < row_end; ++row) {
    for (int64_t c = 0; c < out.chunks; ++c) {
      const float* xc = x + row * x_stride + 32 * c;
      // The same fp32 operations as QuantizeQ8RowRef, so the integers agree bit for bit.
      const float d = AbsMax(xc, 4) / 127.0f;
      const int64_t at = row * out.stride + c;
      const auto [sum0, sum1] = Quantize32(xc, Inverse(d), out.q + 32 * at);
      _mm256_storeu_ps(out.scales + 8 * at, _mm256_set1_ps(d));
      out.sums[SumIndex(row, c, 0, out.stride)] = d * static_cast<float>(sum0);
      out.sums[SumIndex(row, c, 1, out.stride)] = d * static_cast<float>(sum1);
      out.sums[SumIndex(row, c, 2, out.stride)] = d * static_cast<float>(sum0 + sum1);
      if (out.q_sums != nullptr) out.q_sums[at] = sum0 + sum1;
    }
  }
}

void QuantizeQ8KRows(const float* x, int64_t x_stride, int64_t row_begin, int64_t row_end,
                     const Q8KRow* rows) {
  for (int64_t row = row_begin; row < row_end; ++row) {
    const Q8KRow& out = rows[row];
    for (int64_t b = 0; b < out.blocks; ++b) {
      const float* xb = x + row * x_stride + 256 * b;
      // The same fp32 operations as QuantizeQ8KRow, so the integers agree bit for bit.
      const float d = AbsMax(xb, 32) / 127.0f;
      const __m256 inverse = Inverse(d);
      for (int c = 0; c < 8; ++c) {
        const auto [sum0, sum1] = Quantize32(xb + 32 * c, inverse, out.q + 256 * b + 32 * c);
        out.sums[16 * b + 2 * c] = static_cast<int16_t>(sum0);
        out.sums[16 * b + 2 * c + 1] = static_cast<int16_t>(sum1);
        out.scaled_sums[16 * b + 2 * c] = d * static_cast<float>(sum0);
        out.scaled_sums[16 * b + 2 * c + 1] = d * static_cast<float>(sum1);
      }
      out.d[b] = d;
    }
    if (out.biased_pairs != nullptr) PairBiasedQ8KRow(out);
  }
}

}  // namespace arbor::kernels::avx2
