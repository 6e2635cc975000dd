// How far ahead the per-32 kernels of the repacked rows (quant_dot_avx512vnni.cc,
// repacked_ymm_kernel.h) prefetch their weights. Shared so that both instruction sets follow one
// rule; not a layout, so it stays out of the headers whose declarations the A/B races compare.
#ifndef ARBOR_KERNELS_QUANT_REPACKED_PREFETCH_H_
#define ARBOR_KERNELS_QUANT_REPACKED_PREFETCH_H_

#include <cstddef>

namespace arbor::kernels {

// Blocks of `block_bytes` ahead for a pass over `rows` rows of activations (times its groups).
// Few rows stream their weights from memory: 4 KiB ahead, as the best streaming read (four
// blocks, 1.3 KB of Q4_1, left one-row matmuls on two threads 1.03–1.12× slower; 8 KiB was no
// faster). More rows are bound by their arithmetic and meet their weights in cache, where 4 KiB
// cost 1–2 %: four blocks.
constexpr int RepackedPrefetchBlocks(size_t block_bytes, int rows) {
  return rows < 4 ? static_cast<int>((4096 + block_bytes - 1) / block_bytes) : 4;
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_QUANT_REPACKED_PREFETCH_H_
