#include "metrics/misuse.h"

#include <cstdio>
#include <cstdlib>

namespace arbor::metrics::internal {

void Misuse(absl::string_view what) {
  std::fprintf(stderr, "metrics: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

}  // namespace arbor::metrics::internal
