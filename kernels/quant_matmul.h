// The matmul of matmul.h on GGUF block-quantized weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
// Q5_K, Q6_K)
// kept in their blocks: out[m, n] = Σ_k x[m, k] · w[n, k] with w[n] a row of whole blocks. Every
// 32-weight chunk (quant_chunks.h) is widened in registers — w_j = s·q_j + o — so a decode step
// streams 4.5 to 8.5 bits per weight instead of 32, and the activations stay fp32: the result is
// the fp32 matmul of the exactly dequantized weights, to fp32 rounding (no 8-bit activation error
// as in llama.cpp). A chunk contributes s·Σ q_j·x_j + o·Σ x_j, with Σ x_j per 16 weights computed
// once per call, and each widened chunk serves up to eight rows of x (sibling branches, prefill).
#ifndef ARBOR_KERNELS_QUANT_MATMUL_H_
#define ARBOR_KERNELS_QUANT_MATMUL_H_

#include "kernels/matmul.h"

namespace arbor::kernels {

// `p.w_type` must be quantized and `p.k` a whole number of its blocks; `pool` may be null.
void QuantMatmul(const MatmulParams& p, ThreadPool* pool);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_MATMUL_H_
