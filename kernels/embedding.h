// Token embedding lookup: out[i] = table[tokens[i]], widened to fp32.
//
// Framework-free: the params struct is shared by the CPU reference (embedding_ref.cc) and a CUDA
// kernel. Token ids must already be validated against `vocab` (the backend does it at its edge).
#ifndef ARBOR_KERNELS_EMBEDDING_H_
#define ARBOR_KERNELS_EMBEDDING_H_

#include <cstdint>

#include "kernels/weight_type.h"

namespace arbor::kernels {

struct EmbeddingParams {
  const int32_t* tokens = nullptr;  // [num_tokens], each in [0, vocab).
  const void* table = nullptr;      // [vocab, dim] row-major, element type `table_type`
                                    // (quantized types on the CPU only, dim whole blocks).
  WeightType table_type = WeightType::kF32;
  float* out = nullptr;  // [num_tokens, dim], row i at out + i * out_stride.
  int64_t num_tokens = 0;
  int64_t vocab = 0;
  int64_t dim = 0;
  int64_t out_stride = 0;  // Elements between output rows, >= dim.
};

// CPU reference.
void EmbeddingRef(const EmbeddingParams& params);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_EMBEDDING_H_
