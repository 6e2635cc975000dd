// The output features of several matrices as one parallel loop (MatmulGroupRef): chunks of
// their concatenation, each split where a matrix ends, so the threads share the work of all of
// them at once. Shared by the float and quantized matmuls.
#ifndef ARBOR_KERNELS_GROUPED_COLUMNS_H_
#define ARBOR_KERNELS_GROUPED_COLUMNS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>

#include "absl/container/inlined_vector.h"
#include "kernels/cpu/thread_pool.h"

namespace arbor::kernels {

// Calls fn(g, begin, end) for column ranges of every matrix g (widths[g] columns each) covering
// all of them once, on `pool` (null: this thread) in chunks of at least `grain` columns.
inline void ForGroupedColumns(std::span<const int64_t> widths, int64_t grain, ThreadPool* pool,
                              const std::function<void(size_t, int64_t, int64_t)>& fn) {
  absl::InlinedVector<int64_t, 5> starts(widths.size() + 1, 0);
  for (size_t g = 0; g < widths.size(); ++g) starts[g + 1] = starts[g] + widths[g];
  auto run = [&](int64_t begin, int64_t end) {
    // The first matrix that ends after `begin`, then each one the range reaches.
    size_t g = std::upper_bound(starts.begin(), starts.end(), begin) - starts.begin() - 1;
    for (; g < widths.size() && starts[g] < end; ++g) {
      const int64_t from = std::max(begin, starts[g]) - starts[g];
      const int64_t to = std::min(end, starts[g + 1]) - starts[g];
      if (from < to) fn(g, from, to);
    }
  };
  if (pool == nullptr) return run(0, starts.back());
  pool->ParallelFor(starts.back(), grain, run);
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_GROUPED_COLUMNS_H_
