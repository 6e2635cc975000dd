// What a backend's KV cache stores (the worker's --kv_dtype): fp32, or bf16 — half the bytes per
// token, so twice the tokens in the same memory and half the KV bytes read per attention step.
// K and V are rounded to bf16 (nearest, ties to even) as they are written; attention widens them
// exactly and computes in fp32.
#ifndef ARBOR_WORKER_KV_KV_DTYPE_H_
#define ARBOR_WORKER_KV_KV_DTYPE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kernels/paged_kv.h"

namespace arbor::worker {

enum class KvDtype { kF32, kBF16 };

// --kv_dtype: "f32", "bf16", or "auto" — bf16 on CUDA (`cuda`: twice the tokens in the device's
// memory), f32 on the CPU (what the reference tests compare against). INVALID_ARGUMENT naming
// the flag otherwise.
absl::StatusOr<KvDtype> ParseKvDtype(absl::string_view name, bool cuda);

// Bytes per stored element.
inline int KvDtypeBytes(KvDtype dtype) { return dtype == KvDtype::kBF16 ? 2 : 4; }

// One layer's pools `k` and `v` (host or device memory) of `dtype` elements, as the paged-KV ops
// take them: `shape` with its pool pointers set for that dtype.
kernels::PagedKvLayer KvPools(KvDtype dtype, void* k, void* v, kernels::PagedKvLayer shape);

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_KV_KV_DTYPE_H_
