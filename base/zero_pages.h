// Zero-filled memory that becomes resident only as it is written: an anonymous private mapping,
// whose pages the kernel supplies (zeroed) on first touch. For large pools sized for the most
// they may ever hold — a worker's KV cache — where a std::vector<char>(n) would write every byte
// at start: seconds of silence and the whole pool resident before the first request.
//
// With huge pages asked for, the mapping starts on a 2 MiB boundary and is advised
// (MADV_HUGEPAGE) before any page is touched, so that where transparent huge pages are enabled
// ("always" or "madvise") its first touches fault in 2 MiB pages: memory read from end to end
// every step, such as weights, then needs 1/512 of the TLB entries (page walks cost double in a
// VM, where each walks the guest's and the host's tables).
#ifndef ARBOR_BASE_ZERO_PAGES_H_
#define ARBOR_BASE_ZERO_PAGES_H_

#include <cstddef>

#include "absl/status/statusor.h"

namespace arbor::base {

class ZeroPages {
 public:
  // `bytes` of zeroed memory (RESOURCE_EXHAUSTED when the mapping fails); 0 bytes is valid.
  // `huge_pages`: 2 MiB-aligned and advised for huge pages (an advice the kernel may not take;
  // the memory is the same either way).
  static absl::StatusOr<ZeroPages> Map(size_t bytes, bool huge_pages = false);
  static constexpr size_t kHugePageBytes = size_t{2} << 20;
  ZeroPages() = default;
  ~ZeroPages();
  ZeroPages(ZeroPages&& other) noexcept;
  ZeroPages& operator=(ZeroPages&& other) noexcept;
  ZeroPages(const ZeroPages&) = delete;
  ZeroPages& operator=(const ZeroPages&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace arbor::base

#endif  // ARBOR_BASE_ZERO_PAGES_H_
