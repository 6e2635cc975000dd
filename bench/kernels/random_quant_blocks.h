// Random weights in a quantized file type for the kernel benchmarks (arbor-bench-quant-matmul,
// arbor-bench-worker's BM_StreamMatmul): random bytes with every half-precision scale and offset
// 2^-7, realistic enough to keep the sums finite; a kernel's speed does not depend on the values.
#ifndef ARBOR_BENCH_KERNELS_RANDOM_QUANT_BLOCKS_H_
#define ARBOR_BENCH_KERNELS_RANDOM_QUANT_BLOCKS_H_

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/quant/quant_blocks.h"
#include "model/dtype.h"

namespace arbor::bench {

// The blocks of an n × k matrix of `type`, as a file holds them.
inline std::vector<char> RandomQuantBlocks(kernels::WeightType type, int64_t n, int64_t k,
                                           std::mt19937& rng) {
  const model::DType dtype = kernels::FileDType(type);
  const model::DTypeLayout layout = model::Layout(dtype);
  std::vector<char> w(n * k / layout.block_elements * layout.block_bytes);
  for (char& c : w) c = static_cast<char>(rng());
  for (size_t b = 0; b < w.size() / layout.block_bytes; ++b) {
    for (int offset : model::HalfFieldOffsets(dtype)) {
      const uint16_t scale = 0x2000;  // 2^-7.
      std::memcpy(w.data() + b * layout.block_bytes + offset, &scale, 2);
    }
  }
  return w;
}

}  // namespace arbor::bench

#endif  // ARBOR_BENCH_KERNELS_RANDOM_QUANT_BLOCKS_H_
