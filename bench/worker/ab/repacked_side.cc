// One side of repacked_ab.sh's race: the AVX-512 VNNI kernels of the repacked rows of one source
// tree behind plain functions. The script compiles this file twice, once against each tree, the
// second time with the namespace renamed (-Darbor=arbor_base), so both versions link into one
// program.
#include "kernels/quant/quant_dot.h"

namespace arbor::repacked_ab {

// `params` is a kernels::Q8DotParams (the script checks that both trees declare it alike); all
// of its `n` weight rows.
void Multiply(const void* params, int64_t n) {
  kernels::avx512vnni::RepackedDotRange(*static_cast<const kernels::Q8DotParams*>(params), 0, n);
}

// The same for the K-quants' groups: `params` is a kernels::Q8KDotParams.
void MultiplyKQuant(const void* params, int64_t n) {
  kernels::avx512vnni::RepackedKQuantDotRange(*static_cast<const kernels::Q8KDotParams*>(params), 0,
                                              n);
}

}  // namespace arbor::repacked_ab
