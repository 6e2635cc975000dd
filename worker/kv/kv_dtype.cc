#include "worker/kv/kv_dtype.h"

#include "absl/strings/str_cat.h"

namespace arbor::worker {

absl::StatusOr<KvDtype> ParseKvDtype(absl::string_view name, bool cuda) {
  if (name == "auto") return cuda ? KvDtype::kBF16 : KvDtype::kF32;
  if (name == "f32") return KvDtype::kF32;
  if (name == "bf16") return KvDtype::kBF16;
  return absl::InvalidArgumentError(
      absl::StrCat("--kv_dtype=", name, ": expected auto, f32 or bf16"));
}

kernels::PagedKvLayer KvPools(KvDtype dtype, void* k, void* v, kernels::PagedKvLayer shape) {
  shape.k = shape.v = nullptr;
  shape.k_bf16 = shape.v_bf16 = nullptr;
  if (dtype == KvDtype::kBF16) {
    shape.k_bf16 = static_cast<uint16_t*>(k);
    shape.v_bf16 = static_cast<uint16_t*>(v);
  } else {
    shape.k = static_cast<float*>(k);
    shape.v = static_cast<float*>(v);
  }
  return shape;
}

}  // namespace arbor::worker
