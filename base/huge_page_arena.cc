#include "base/huge_page_arena.h"

#include <algorithm>
#include <utility>

#include "base/status_macros.h"

namespace arbor::base {

absl::StatusOr<char*> HugePageArena::Allocate(size_t bytes) {
  const size_t start = (used_ + kAlignment - 1) / kAlignment * kAlignment;
  if (mappings_.empty() || start + bytes > mappings_.back().size()) {
    ASSIGN_OR_RETURN(ZeroPages pages,
                     ZeroPages::Map(std::max(bytes, kMappingBytes), /*huge_pages=*/true));
    mappings_.push_back(std::move(pages));
    used_ = bytes;
    return mappings_.back().data();
  }
  used_ = start + bytes;
  return mappings_.back().data() + start;
}

}  // namespace arbor::base
