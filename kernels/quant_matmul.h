// The matmul of matmul.h on GGUF block-quantized weights (Q8_0, Q4_0, Q4_1) kept in their blocks:
// out[m, n] = Σ_k x[m, k] · w[n, k] with w[n] a row of k / 32 blocks. Every block is widened in
// registers — w_j = d·q_j + m (Q4_0: m = −8·d; Q8_0: m = 0) — so a decode step streams 5 to 8.5
// bits per weight instead of 32, and the activations stay fp32: the result is the fp32 matmul of
// the exactly dequantized weights, to fp32 rounding (no 8-bit activation error as in llama.cpp).
// Each block contributes d·Σ q_j·x_j + m·Σ x_j, with Σ x_j per block computed once per call, and
// each widened block serves up to eight rows of x (sibling branches, prefill).
#ifndef ARBOR_KERNELS_QUANT_MATMUL_H_
#define ARBOR_KERNELS_QUANT_MATMUL_H_

#include "kernels/matmul.h"

namespace arbor::kernels {

// `p.w_type` must be quantized and `p.k` a multiple of 32; `pool` may be null.
void QuantMatmul(const MatmulParams& p, ThreadPool* pool);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_MATMUL_H_
