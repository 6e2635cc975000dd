// The float64 twins the kQ8 kernels of quant_matmul.h are tested against: the definitions of
// what those kernels compute, in a library only tests and references link (arbor_kernels_twins).
#ifndef ARBOR_KERNELS_QUANT_QUANT_MATMUL_TWIN_H_
#define ARBOR_KERNELS_QUANT_QUANT_MATMUL_TWIN_H_

#include "kernels/matmul.h"

namespace arbor::kernels {

// kQ8: the activations quantized as the kernels do (QuantizeQ8RowRef), both operands dequantized
// and multiplied in float64. out is [m, n], dense.
void QuantMatmulQ8Twin(const MatmulParams& p, double* out);

// kQ8 per 256 values (QuantMatmulQ8K): the activations quantized by QuantizeQ8KRow, multiplied in
// float64 with the dequantized weights. out is [m, n], dense.
void QuantMatmulQ8KTwin(const MatmulParams& p, double* out);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_QUANT_MATMUL_TWIN_H_
