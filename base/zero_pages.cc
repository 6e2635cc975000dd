#include "base/zero_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"

namespace arbor::base {

absl::StatusOr<ZeroPages> ZeroPages::Map(size_t bytes, bool huge_pages) {
  ZeroPages pages;
  if (bytes == 0) return pages;
  // For huge pages, one huge page more than asked, then the unaligned head and the tail beyond
  // `bytes` unmapped again: mmap aligns only to the small page.
  const size_t slack = huge_pages ? kHugePageBytes : 0;
  void* p =
      mmap(nullptr, bytes + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map ", bytes, " bytes of memory (lower the KV capacity)"));
  }
  char* start = static_cast<char*>(p);
  if (huge_pages) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    char* aligned = start + ((kHugePageBytes - at % kHugePageBytes) % kHugePageBytes);
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    char* end = aligned + (bytes + page - 1) / page * page;
    if (aligned > start) munmap(start, aligned - start);
    if (start + bytes + slack > end) munmap(end, start + bytes + slack - end);
    start = aligned;
    // Best effort: without transparent huge pages the mapping serves in small pages.
    (void)madvise(start, bytes, MADV_HUGEPAGE);
  }
  pages.data_ = start;
  pages.size_ = bytes;
  return pages;
}

ZeroPages::~ZeroPages() {
  if (data_ != nullptr) munmap(data_, size_);
}

ZeroPages::ZeroPages(ZeroPages&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

ZeroPages& ZeroPages::operator=(ZeroPages&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace arbor::base
