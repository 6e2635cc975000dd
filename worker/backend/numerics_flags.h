// The backend's number formats as a command line gives them: what the weight matrices are
// computed in (--weights_dtype), how quantized matrices meet the activations
// (--activation_quant) and whether a row's results depend on what shares its step (--numerics).
// Defined once, for arbor-worker and the CPU backend benchmark, which measure the same choices.
#ifndef ARBOR_WORKER_BACKEND_NUMERICS_FLAGS_H_
#define ARBOR_WORKER_BACKEND_NUMERICS_FLAGS_H_

#include <string>

namespace arbor::worker {

// As given, each parsed where it is used (weights.h: ParseWeightsDtype, ParseActivationQuant,
// ParseNumerics), where the device decides which values apply.
struct NumericsFlags {
  std::string weights_dtype;     // native | f32 | bf16 | q8_0
  std::string activation_quant;  // q8 | f32
  std::string numerics;          // invariant | fast
};

NumericsFlags NumericsFlagsFromFlags();

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_BACKEND_NUMERICS_FLAGS_H_
