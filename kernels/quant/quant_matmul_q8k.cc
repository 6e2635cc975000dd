// QuantMatmulQ8K (quant_matmul.h): Q4_K and Q6_K weights at few rows against per-256 activations.
#include <algorithm>
#include <cassert>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/grouped_columns.h"
#include "kernels/quant/q8k_activations.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_dot.h"
#include "kernels/quant/quant_matmul.h"
#include "kernels/quant/repacked_rows.h"

namespace arbor::kernels {

namespace {

// The AVX-512 form where the 8-bit kernels may use it (ARBOR_Q8_ISA can cap them).
bool Q8KOnAvx512() {
  const std::optional<Q8Isa> best = BestQ8Isa();
  return best == Q8Isa::kAvx512Vnni || best == Q8Isa::kAmx;
}

// Rows [first, first + m) of the matmul (their activations at `x`) against every output.
void MultiplyRows(const MatmulParams& p, std::span<const MatmulOutput> outputs, const Q8KRow* x,
                  int64_t m, int64_t first, ThreadPool* pool) {
  // Repacked rows on tiles from kAmxKQuantMinRows rows, which give the vector kernels' bits.
  const bool tiles = KQuantTilesForRows(m);
  absl::InlinedVector<Q8KDotParams, 4> dots;
  absl::InlinedVector<int64_t, 4> widths, units;
  int64_t unit = 1;  // A repacked matrix hands out whole groups of rows (RowsPerUnit).
  for (const MatmulOutput& output : outputs) {
    assert(output.w_type == WeightType::kQ4_K || output.w_type == WeightType::kQ6_K ||
           IsRepackedKQuant(output.w_type));
    dots.push_back(
        {output.w, output.w_type, x, m, output.out + first * output.out_stride, output.out_stride});
    // The tile kernel takes two groups at a time: pairs where the matrix has them.
    const int64_t rows_per_unit = RowsPerUnit(output.w_type);
    units.push_back(tiles && rows_per_unit == 8 && output.n % 16 == 0 ? 16 : rows_per_unit);
    widths.push_back(output.n / units.back());
    unit = std::max(unit, units.back());
  }
  // One to three rows: the AVX2 form serves them in one group; more: 8 at a time on AVX-512.
  // Batch-invariant: one form at every row count.
  const bool avx512 = Q8KOnAvx512() && (p.batch_invariant || m > kQ8KMaxRows);
  const auto kernel = avx512 ? avx512vnni::KQuantDotQ8KRange : avx2::KQuantDotQ8KRange;
  const auto repacked = tiles                            ? amx::RepackedKQuantDotRange
                        : Q8KOnAvx512()                  ? avx512vnni::RepackedKQuantDotRange
                        : BestQ8Isa() == Q8Isa::kAvxVnni ? avxvnni::RepackedKQuantDotRange
                                                         : avx2::RepackedKQuantDotRange;
  // ~64k multiply-adds per hand-off, as the other matmuls.
  const int64_t grain = std::max<int64_t>(1, 65536 / (m * p.k) / unit);
  ForGroupedColumns(widths, grain, pool, [&](size_t g, int64_t begin, int64_t end) {
    const int64_t rows = units[g];
    (rows == 1 ? kernel : repacked)(dots[g], begin * rows, end * rows);
  });
}

}  // namespace

bool TakesQ8K(const MatmulParams& p) {
  if (p.w_type != WeightType::kQ4_K && p.w_type != WeightType::kQ6_K) return false;
  if (p.batch_invariant || p.m <= kQ8KMaxRows) return true;
  return Q8KOnAvx512() && (p.m < kAmxMinRows || BestQ8Isa() != Q8Isa::kAmx);
}

int64_t Q8KRowBlock(int64_t m, int64_t k) {
  const int64_t most = std::max<int64_t>(64, (int64_t{512} << 10) / std::max<int64_t>(k, 1));
  const int64_t blocks = (m + most - 1) / most;
  return ((m + blocks - 1) / blocks + 15) / 16 * 16;
}

void QuantMatmulQ8K(const MatmulParams& p, ThreadPool* pool) {
  const MatmulOutput output{p.w, p.w_type, p.out, p.n, p.out_stride};
  QuantMatmulQ8KGroup(p, {&output, 1}, pool);
}

void QuantMatmulQ8KGroup(const MatmulParams& p, std::span<const MatmulOutput> outputs,
                         ThreadPool* pool) {
  if (p.m == 0 || outputs.empty()) return;
  thread_local std::vector<int8_t> q;
  thread_local std::vector<float> d;
  thread_local std::vector<int16_t> sums;
  thread_local std::vector<float> scaled_sums;
  thread_local std::vector<uint8_t> biased_pairs;
  thread_local std::vector<Q8KRow> rows;
  const int64_t blocks = p.k / kSuperBlock;
  q.resize(p.m * p.k);
  d.resize(p.m * blocks);
  sums.resize(p.m * blocks * 16);
  scaled_sums.resize(p.m * blocks * 16);
  const bool pairs = std::any_of(outputs.begin(), outputs.end(), [](const MatmulOutput& o) {
    return o.w_type == WeightType::kQ6Kx8;
  });
  biased_pairs.resize(pairs ? p.m * p.k : 0);
  rows.resize(p.m);
  for (int64_t i = 0; i < p.m; ++i) {
    rows[i] = {q.data() + i * p.k,
               d.data() + i * blocks,
               sums.data() + i * blocks * 16,
               scaled_sums.data() + i * blocks * 16,
               pairs ? biased_pairs.data() + i * p.k : nullptr,
               blocks};
  }
  const Q8KRow* quantized = rows.data();  // The workers' own thread_locals are not these.
  if (pool == nullptr) {
    avx2::QuantizeQ8KRows(p.x, p.x_stride, 0, p.m, quantized);
  } else {
    // As QuantMatmulQ8's: threads pay off on prefill-sized inputs.
    pool->ParallelFor(p.m, std::max<int64_t>(1, 16384 / p.k), [&](int64_t begin, int64_t end) {
      avx2::QuantizeQ8KRows(p.x, p.x_stride, begin, end, quantized);
    });
  }
  const int64_t block_rows = Q8KRowBlock(p.m, p.k);
  for (int64_t begin = 0; begin < p.m; begin += block_rows) {
    MultiplyRows(p, outputs, rows.data() + begin, std::min(block_rows, p.m - begin), begin, pool);
  }
}

}  // namespace arbor::kernels
