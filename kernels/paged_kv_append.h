// Writes the step's new K and V rows into their paged slots (block table → slot), before the
// attention of the same layer reads them. See paged_kv.h for the layout.
//
// Framework-free: shared by the CPU reference (paged_kv_append_ref.cc) and a CUDA kernel.
#ifndef ARBOR_KERNELS_PAGED_KV_APPEND_H_
#define ARBOR_KERNELS_PAGED_KV_APPEND_H_

#include <cstdint>

#include "kernels/paged_kv.h"

namespace arbor::kernels {

struct PagedKvAppendParams {
  PagedBatch batch;
  PagedKvLayer cache;
  const float* k = nullptr;  // [num_tokens, num_kv_heads · head_dim], token t at k + t·k_stride.
  const float* v = nullptr;  // Same, with v_stride.
  int64_t k_stride = 0;
  int64_t v_stride = 0;
};

// CPU reference.
void PagedKvAppendRef(const PagedKvAppendParams& params);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_PAGED_KV_APPEND_H_
