// The 8-bit-activation quantized matmul's per-instruction-set kernels: the interface between
// quant_matmul_q8.cc (which quantizes the activations, picks the instruction set at run time and
// spreads output features over threads) and the translation units quant_dot_avx2.cc,
// quant_dot_avxvnni.cc and quant_dot_avx512vnni.cc, each compiled with its own -m flags from one
// kernel body (quant_dot_kernel.h), and quant_dot_amx.cc (tiles), so a binary built anywhere runs
// the best one the CPU has.
#ifndef ARBOR_KERNELS_QUANT_QUANT_DOT_H_
#define ARBOR_KERNELS_QUANT_QUANT_DOT_H_

#include <cstdint>

#include "kernels/quant/q8_activations.h"
#include "kernels/quant/q8k_activations.h"
#include "kernels/weight_type.h"

namespace arbor::kernels {

// out[i, j] = Σ_k x̃[i, k] · w[j, k] with x̃ = d·q the quantized activations.
struct Q8DotParams {
  const void* w = nullptr;  // [n, k] rows of whole blocks of `w_type` (quantized).
  WeightType w_type = WeightType::kQ8_0;
  Q8Rows x;  // m rows of k values.
  int64_t m = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
  bool batch_invariant = true;  // MatmulParams::batch_invariant (the 256-bit kernels' order).
};

// The same for Q4_K or Q6_K weights against per-256 activations (QuantMatmulQ8K).
struct Q8KDotParams {
  const void* w = nullptr;  // [n, k] rows of whole super-blocks of `w_type`.
  WeightType w_type = WeightType::kQ4_K;
  const Q8KRow* rows = nullptr;
  int64_t m = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
};

namespace avx2 {
// AVX2 + FMA + F16C: maddubs/madd. Also holds the vector activation quantizers (AVX2 is what
// every path here needs), which match QuantizeQ8RowRef and QuantizeQ8KRow bit for bit.
void QuantizeQ8Rows(const float* x, int64_t x_stride, int64_t row_begin, int64_t row_end,
                    const Q8Rows& out);
// QuantizeQ8KRow of rows [row_begin, row_end) into rows[row] (and PairBiasedQ8KRow where a row
// has biased_pairs), bit for bit.
void QuantizeQ8KRows(const float* x, int64_t x_stride, int64_t row_begin, int64_t row_end,
                     const Q8KRow* rows);
void Q8DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end);
// The per-256 kernel (quant_dot_q8k_kernel.h): rows in groups of kQ8KMaxRows.
void KQuantDotQ8KRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end);
// WeightType::kQ4x16, kQ5x16 and kQ8x16 as two halves of eight rows (repacked_ymm_kernel.h); the
// same bits as avx512vnni::RepackedDotRange.
void RepackedDotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end);
// WeightType::kQ4Kx8, kQ5Kx8 and kQ6Kx8 as two halves of four rows (repacked_kquant_ymm_kernel.h);
// the same bits as avx512vnni::RepackedKQuantDotRange.
void RepackedKQuantDotRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end);
}  // namespace avx2
namespace avxvnni {
// AVX-VNNI: vpdpbusd on ymm (Alder Lake, Sapphire Rapids, Zen 5).
void Q8DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end);
// As avx2::RepackedDotRange, with vpdpbusd.
void RepackedDotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end);
// As avx2::RepackedKQuantDotRange, with vpdpbusd and vpdpwssd.
void RepackedKQuantDotRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end);
}  // namespace avxvnni
namespace avx512vnni {
// AVX-512 F/BW/VL + VNNI: vpdpbusd on zmm, two chunks per instruction (Ice Lake and later, Zen 4).
void Q8DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end);
// The per-256 kernel (quant_dot_q8k_kernel.h): rows in groups of 8.
void KQuantDotQ8KRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end);
// WeightType::kQ4x16, kQ5x16 and kQ8x16 (repacked_rows.h): p.w holds their groups of sixteen
// rows; n_begin and n_end are multiples of 16.
void RepackedDotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end);
// WeightType::kQ4Kx8, kQ5Kx8 and kQ6Kx8 (repacked_rows.h) against per-256 activations; n_begin and
// n_end are multiples of 8 (repacked_kquant_avx512vnni.cc).
void RepackedKQuantDotRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end);
}  // namespace avx512vnni
namespace amx {
// AMX-INT8 tiles, AVX-512 around them (Sapphire Rapids and later).
void Q8DotRange(const Q8DotParams& p, int64_t n_begin, int64_t n_end);
// WeightType::kQ4Kx8, kQ5Kx8 and kQ6Kx8 (multiples of 8) on tiles: the same bits as
// avx512vnni::RepackedKQuantDotRange (repacked_kquant_amx.cc).
void RepackedKQuantDotRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end);
// Asks the OS for this process's tile state (Linux grants it on request); false when refused.
bool GrantTiles();
}  // namespace amx

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_QUANT_DOT_H_
