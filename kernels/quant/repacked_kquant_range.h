// The loop the K-quant repacked kernels (repacked_kquant_avx512vnni.cc,
// repacked_kquant_ymm_kernel.h) run over a matrix: group by group of eight weight rows, the
// activation rows in even passes of at most kRows (row_passes.h), each a Pass<K, R>::Run for its
// R rows. Plain C++: each instantiation is made with its own translation unit's kernel types, so
// the flags of that unit are the only ones it meets.
#ifndef ARBOR_KERNELS_QUANT_REPACKED_KQUANT_RANGE_H_
#define ARBOR_KERNELS_QUANT_REPACKED_KQUANT_RANGE_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "kernels/quant/quant_dot.h"
#include "kernels/quant/row_passes.h"

namespace arbor::kernels {

// Output features [n_begin, n_end) (multiples of 8) of the repacked matrix p.w, whose groups are
// of K::Block.
template <template <typename, int> class Pass, typename K, int kRows>
void GroupsRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  using Run = void (*)(const typename K::Block*, int64_t, const Q8KRow*, float*, int64_t);
  static constexpr auto kPasses = []<size_t... R>(std::index_sequence<R...>) {
    return std::array<Run, kRows>{&Pass<K, R + 1>::Run...};
  }
  (std::make_index_sequence<kRows>());
  const auto* w = static_cast<const typename K::Block*>(p.w);
  const int64_t blocks = p.rows[0].blocks;
  for (int64_t n = n_begin; n < n_end; n += 8) {
    ForEachRowPass(p.m, kRows, [&](int64_t m0, int64_t rows) {
      kPasses[rows - 1](w + (n / 8) * blocks, blocks, p.rows + m0, p.out + m0 * p.out_stride + n,
                        p.out_stride);
    });
  }
}

// The same for a kQ4Kx8 (kernel Q4K), kQ5Kx8 (Q5K) or kQ6Kx8 (Q6K) matrix.
template <template <typename, int> class Pass, typename Q4K, typename Q5K, typename Q6K, int kRows>
void RepackedKQuantRange(const Q8KDotParams& p, int64_t n_begin, int64_t n_end) {
  if (p.w_type == WeightType::kQ6Kx8) return GroupsRange<Pass, Q6K, kRows>(p, n_begin, n_end);
  if (p.w_type == WeightType::kQ5Kx8) return GroupsRange<Pass, Q5K, kRows>(p, n_begin, n_end);
  GroupsRange<Pass, Q4K, kRows>(p, n_begin, n_end);
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_REPACKED_KQUANT_RANGE_H_
