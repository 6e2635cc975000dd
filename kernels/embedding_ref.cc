#include "base/bf16.h"
#include "kernels/embedding.h"
#include "kernels/quant/quant_blocks.h"

namespace arbor::kernels {

void EmbeddingRef(const EmbeddingParams& p) {
  for (int64_t i = 0; i < p.num_tokens; ++i) {
    const int64_t token = p.tokens[i];
    float* out = p.out + i * p.out_stride;
    if (IsQuantized(p.table_type)) {
      const int64_t row_bytes = model::RowBytes(FileDType(p.table_type), p.dim);
      DequantizeRow(FileDType(p.table_type), static_cast<const char*>(p.table) + token * row_bytes,
                    p.dim, out);
    } else if (p.table_type == WeightType::kF32) {
      const float* row = static_cast<const float*>(p.table) + token * p.dim;
      for (int64_t j = 0; j < p.dim; ++j) out[j] = row[j];
    } else {
      const uint16_t* row = static_cast<const uint16_t*>(p.table) + token * p.dim;
      for (int64_t j = 0; j < p.dim; ++j) out[j] = base::Bf16ToFloat(row[j]);
    }
  }
}

}  // namespace arbor::kernels
