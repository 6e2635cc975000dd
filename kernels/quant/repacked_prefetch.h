// How far ahead the kernels of the repacked rows prefetch their weights (into L1, one prefetch a
// cache line). Shared so that each family of kernels follows one rule; not a layout, so it stays
// out of the headers whose declarations the A/B races compare.
#ifndef ARBOR_KERNELS_QUANT_REPACKED_PREFETCH_H_
#define ARBOR_KERNELS_QUANT_REPACKED_PREFETCH_H_

#include <algorithm>
#include <cstddef>

namespace arbor::kernels {

// Bytes ahead where the weights stream from memory (a one-row pass), by the CPUs each family
// runs on. The 512-bit kernels (AVX-512 CPUs): 4 KiB, as the best streaming read prefetches
// there (on an Intel Xeon 1.3 KB left one-row matmuls on two threads 1.03–1.12× slower and 8 KiB
// was no faster). The 256-bit kernels (AVX2-only CPUs): about 1.75 KiB. On a Zen 3 one-row
// matmuls on two threads streamed Q8_0 at 0.92–0.98 of the same moments' read 1–1.6 KiB ahead,
// where 4 KiB reached 0.86–0.88; Q6_K at 0.66–0.77 one super-block (1.7 KB) ahead, where two
// (3.4 KB) reached 0.65–0.68; Q4_K kept two (2.4 KB: median 0.88, against 0.86 at one).
inline constexpr size_t kZmmPrefetchBytes = 4096;
inline constexpr size_t kYmmPrefetchBytes = 1792;

// The whole blocks of `block_bytes` nearest `bytes`, at least one.
constexpr int BlocksNear(size_t block_bytes, size_t bytes) {
  return std::max(1, static_cast<int>((bytes + block_bytes / 2) / block_bytes));
}

// Blocks ahead for a pass of the per-32 kernels over `rows` rows of activations (times its
// groups). Few rows stream their weights from memory: `bytes` ahead. More rows are bound by their
// arithmetic and meet their weights in cache, where 4 KiB cost 1–2 %: four blocks.
constexpr int RepackedPrefetchBlocks(size_t block_bytes, int rows, size_t bytes) {
  return rows < 4 ? BlocksNear(block_bytes, bytes) : 4;
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_REPACKED_PREFETCH_H_
