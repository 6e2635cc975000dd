// Gives a range of memory's resident pages back to the OS, keeping their contents: for weights
// read once at load and never again (a matrix the CPU backend repacked into its own copy), whose
// pages of the mapped checkpoint would otherwise stay in the process's resident set beside the
// copy.
#ifndef ARBOR_BASE_PAGE_OUT_H_
#define ARBOR_BASE_PAGE_OUT_H_

#include <cstddef>

namespace arbor::base {

// Asks the kernel to reclaim the whole pages inside [data, data + bytes) (madvise MADV_PAGEOUT):
// clean file-backed pages are dropped and read again from the file if touched; anonymous pages
// are swapped out or left, never lost. Pages only partly inside the range are kept. A no-op
// where the kernel lacks MADV_PAGEOUT (Linux before 5.4).
void PageOut(const void* data, size_t bytes);

}  // namespace arbor::base

#endif  // ARBOR_BASE_PAGE_OUT_H_
