// The quantized matmul's 8-bit-activation kernels for AVX-VNNI: vpdpbusd on ymm does the u8·s8
// products and their sum by four in one instruction where AVX2 needs two (and cannot saturate).
// Compiled with -mavxvnni but without AVX-512 (kernels/CMakeLists.txt).
#define ARBOR_QUANT_ISA_NS avxvnni
#include "kernels/quant/quant_dot_kernel.h"
#include "kernels/quant/repacked_kquant_ymm_kernel.h"
#include "kernels/quant/repacked_ymm_kernel.h"

namespace arbor::kernels::avxvnni {
namespace {

struct Isa : Ymm {
  static VI Dot(VI u8, VI s8) { return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u8, s8); }
  static VI DotSigned(const Signed& w, VI x) {
    return Dot(w.magnitude, _mm256_sign_epi8(x, w.sign));
  }
};

}  // namespace

void Q8DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  DotRange<Isa>(p, n_begin, n_end);
}

void RepackedDotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end) {
  repacked::DotRange</*kVnni=*/true>(p, n_begin, n_end);
}

void RepackedKQuantDotRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  kquant::DotRange</*kVnni=*/true>(p, n_begin, n_end);
}

}  // namespace arbor::kernels::avxvnni
