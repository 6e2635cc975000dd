#include "base/page_out.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace arbor::base {

void PageOut(const void* data, size_t bytes) {
#ifdef MADV_PAGEOUT
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  // Advice only: a kernel that refuses it (EINVAL) leaves the pages resident, as before.
  if (begin < end) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace arbor::base
