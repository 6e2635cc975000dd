#include "rpc/internal_key.h"

#include <random>

#include "absl/strings/str_cat.h"

namespace arbor::rpc {

std::string NewInternalKey() {
  std::random_device random;  // getrandom(2) on Linux: fit for a secret.
  std::string key;
  for (int i = 0; i < 8; ++i) absl::StrAppend(&key, absl::Hex(random(), absl::kZeroPad8));
  return key;
}

}  // namespace arbor::rpc
