#include "worker/backend/numerics_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::string, weights_dtype, "native",
          "What the weight matrices are computed in: native (the file's own types; GGUF "
          "quantized blocks stay memory-mapped and are multiplied block by block, f16 widens to "
          "f32), f32 (everything widened, exact), bf16 (half the bytes of f32), or q8_0 (f32/bf16 "
          "checkpoints quantized at load: ~3.8x fewer bytes than f32 per decode step). On CUDA: "
          "native (GGUF blocks kept on the device and widened to bf16 inside the GEMM, the rest "
          "bf16) or bf16 (every matrix widened to bf16 at load).");
ABSL_FLAG(std::string, activation_quant, "q8",
          "How GGUF-quantized weight matrices meet the activations on the CPU: q8 (each "
          "activation row quantized to 8 bits per 32 values, integer dot products on "
          "AVX2/AVX-VNNI/AVX-512 VNNI picked at run time, as llama.cpp; 1.5-3x faster decode) or "
          "f32 (weights widened to fp32 against fp32 activations: exact to fp32 rounding). "
          "Other weight types always compute in fp32.");
ABSL_FLAG(std::string, numerics, "invariant",
          "invariant: a row's logits, metrics and attention statistics are bit-identical whatever "
          "shares its step (other jobs and branches, prefill chunking, prefix-cache hits, thread "
          "count; on CPUs with AMX, tiles multiply K-quant matrices from 32 rows with the same "
          "bits), so the same seed replays the same search tree (arbor replay); fast: the "
          "fastest kernel for each batch size (on CPUs, 256-bit kernels for few rows; on GPUs, "
          "GEMVs for few rows, cuBLASLt for more and cascade attention for siblings), whose "
          "rounding then depends on the batch. docs/PERFORMANCE.md has the cost.");

namespace arbor::worker {

NumericsFlags NumericsFlagsFromFlags() {
  NumericsFlags flags;
  flags.weights_dtype = absl::GetFlag(FLAGS_weights_dtype);
  flags.activation_quant = absl::GetFlag(FLAGS_activation_quant);
  flags.numerics = absl::GetFlag(FLAGS_numerics);
  return flags;
}

}  // namespace arbor::worker
