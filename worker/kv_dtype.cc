#include "worker/kv_dtype.h"

#include "absl/strings/str_cat.h"

namespace arbor::worker {

absl::StatusOr<KvDtype> ParseKvDtype(absl::string_view name) {
  if (name == "f32") return KvDtype::kF32;
  if (name == "bf16") return KvDtype::kBF16;
  return absl::InvalidArgumentError(absl::StrCat("--kv_dtype=", name, ": expected f32 or bf16"));
}

}  // namespace arbor::worker
