// How the repacked kernels split a matmul's activation rows into passes over a weight group:
// as few passes as the kernel's register blocking allows, as even as can be. A short last pass
// (eight rows and one) would unpack every weight again for a row or two and run the kernel at its
// least efficient width, where even passes (five and four) unpack as often and keep every pass
// wide. Which rows share a pass never changes a row's bits.
#ifndef ARBOR_KERNELS_QUANT_ROW_PASSES_H_
#define ARBOR_KERNELS_QUANT_ROW_PASSES_H_

#include <cstdint>

namespace arbor::kernels {

// Calls pass(first_row, rows) for consecutive passes covering rows [0, m), each of at most
// `max_rows` rows, their sizes differing by one at most.
template <typename Pass>
void ForEachRowPass(int64_t m, int64_t max_rows, Pass&& pass) {
  const int64_t passes = (m + max_rows - 1) / max_rows;
  for (int64_t i = 0, first = 0; i < passes; ++i) {
    const int64_t rows = (m - first + passes - i - 1) / (passes - i);
    pass(first, rows);
    first += rows;
  }
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_ROW_PASSES_H_
