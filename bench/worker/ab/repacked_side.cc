// One side of repacked_ab.sh's race: the kernels of the repacked rows of one source tree behind
// plain functions, the AVX-512 VNNI ones, or with REPACKED_AB_AVX2 defined the 256-bit ones of
// AVX2 CPUs. The script compiles this file twice, once against each tree, the second time with
// the namespace renamed (-Darbor=arbor_base), so both versions link into one program.
#include "kernels/quant/quant_dot.h"

namespace arbor::repacked_ab {

#if defined(REPACKED_AB_AVX2)
namespace isa = kernels::avx2;
#else
namespace isa = kernels::avx512vnni;
#endif

// `params` is a kernels::Q8DotParams (the script checks that both trees declare it alike); all
// of its `n` weight rows.
void Multiply(const void* params, int64_t n) {
  isa::RepackedDotRange(*static_cast<const kernels::Q8DotParams*>(params), 0, n);
}

// The same for the K-quants' groups: `params` is a kernels::Q8KDotParams.
void MultiplyKQuant(const void* params, int64_t n) {
  isa::RepackedKQuantDotRange(*static_cast<const kernels::Q8KDotParams*>(params), 0, n);
}

}  // namespace arbor::repacked_ab
