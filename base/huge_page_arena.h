// Memory for many large, long-lived buffers (the CPU backend's repacked weight matrices) packed
// one after another into a few mappings advised for transparent huge pages (ZeroPages), freed
// together with the arena. One mapping per buffer would leave each buffer's last, partly used 2 MiB
// in small pages (or waste the rest of it); packed, only each mapping's end does.
#ifndef ARBOR_BASE_HUGE_PAGE_ARENA_H_
#define ARBOR_BASE_HUGE_PAGE_ARENA_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "base/zero_pages.h"

namespace arbor::base {

class HugePageArena {
 public:
  // Buffers start on this boundary (a cache line, and an AVX-512 vector).
  static constexpr size_t kAlignment = 64;
  // Mappings are this large, or as large as a buffer that needs more.
  static constexpr size_t kMappingBytes = size_t{64} << 20;

  // `bytes` of zeroed memory that stays valid while the arena lives (RESOURCE_EXHAUSTED when no
  // mapping can be made). Placed after the previous buffer when it fits in that one's mapping.
  absl::StatusOr<char*> Allocate(size_t bytes);

 private:
  std::vector<ZeroPages> mappings_;
  size_t used_ = 0;  // Bytes of mappings_.back() handed out.
};

}  // namespace arbor::base

#endif  // ARBOR_BASE_HUGE_PAGE_ARENA_H_
