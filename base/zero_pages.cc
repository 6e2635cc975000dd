#include "base/zero_pages.h"

#include <sys/mman.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace arbor::base {

absl::StatusOr<ZeroPages> ZeroPages::Map(size_t bytes) {
  ZeroPages pages;
  if (bytes == 0) return pages;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map ", bytes, " bytes of memory (lower the KV capacity)"));
  }
  pages.data_ = static_cast<char*>(p);
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
