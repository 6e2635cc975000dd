// QuantMatmul's kQ8 mode (quant_matmul.h): quantizes the activations once per call, then spreads
// the output features over the pool, each range computed by the instruction set's kernel
// (quant_dot.h) picked from the CPU at run time.
#include <cpuid.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/grouped_columns.h"
#include "kernels/quant/q8_activations.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_dot.h"
#include "kernels/quant/quant_matmul.h"
#include "kernels/quant/repacked_rows.h"

namespace arbor::kernels {
namespace {

// Storage for Q8Rows, kept per thread between calls: a prefill's activations run to megabytes,
// which a fresh allocation per matmul would map and fault in every time.
struct Q8Buffers {
  std::vector<int8_t> q;
  std::vector<float> scales, sums;
  std::vector<int32_t> q_sums;

  Q8Rows Rows(int64_t m, int64_t k) {
    Q8Rows rows;
    rows.chunks = k / kQuantBlock;
    rows.stride = (rows.chunks + 1) / 2 * 2;
    q.resize(m * rows.stride * 32);
    scales.resize(m * rows.stride * 8);
    sums.resize(SumsSize(m, rows.stride));
    rows.q = q.data();
    rows.scales = scales.data();
    rows.sums = sums.data();
    q_sums.resize(m * rows.stride);
    rows.q_sums = q_sums.data();
    // The quantizer then writes every real chunk; the padding chunk of an odd chunk count must
    // read as zeros (the 512-bit kernel multiplies it by zero weights), and so must the offset
    // sums of the rows that fill up the last group of eight, so that no stale value reaches a
    // lane. That group's sums are one run, zeroed whole before the quantizer writes its real
    // rows: one fill where a one-row decode step makes ~120 of these calls.
    if (m % 8 != 0) {
      std::fill_n(rows.sums + SumIndex(m / 8 * 8, 0, 0, rows.stride), rows.stride * 3 * 8, 0.0f);
    }
    for (int64_t c = rows.chunks; c < rows.stride; ++c) {
      for (int64_t i = 0; i < m; ++i) {
        std::fill_n(rows.q + 32 * (i * rows.stride + c), 32, 0);
        std::fill_n(rows.scales + 8 * (i * rows.stride + c), 8, 0.0f);
        for (int part = 0; part < 3; ++part) rows.sums[SumIndex(i, c, part, rows.stride)] = 0.0f;
      }
    }
    return rows;
  }
};

using DotRangeFn = void (*)(const Q8DotParams&, int64_t, int64_t);

// `isa`'s kernels of the file's blocks and of the repacked rows (AMX's repacked per-32 rows are
// AVX-512's: KQuantTilesForRows says why).
struct Kernels {
  DotRangeFn file, repacked;
};
Kernels KernelsOf(Q8Isa isa) {
  switch (isa) {
    case Q8Isa::kAvx2:
      return {avx2::Q8DotRange, avx2::RepackedDotRange};
    case Q8Isa::kAvxVnni:
      return {avxvnni::Q8DotRange, avxvnni::RepackedDotRange};
    case Q8Isa::kAvx512Vnni:
      return {avx512vnni::Q8DotRange, avx512vnni::RepackedDotRange};
    default:
      return {amx::Q8DotRange, avx512vnni::RepackedDotRange};
  }
}

// CPUID leaf 7: AMX-TILE and AMX-INT8 (EDX bits 24, 25).
bool CpuHasAmxInt8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (edx >> 24 & 1) != 0 && (edx >> 25 & 1) != 0;
}

}  // namespace

const char* Q8IsaName(Q8Isa isa) {
  switch (isa) {
    case Q8Isa::kAvx2:
      return "avx2";
    case Q8Isa::kAvxVnni:
      return "avx-vnni";
    case Q8Isa::kAvx512Vnni:
      return "avx512-vnni";
    default:
      return "amx";
  }
}

bool CpuRunsQ8Isa(Q8Isa isa) {
  // libgcc's cpuid reading also checks that the OS saves the ymm/zmm state (xgetbv).
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("f16c");
  switch (isa) {
    case Q8Isa::kAvx2:
      return avx2;
    case Q8Isa::kAvxVnni:
      return avx2 && __builtin_cpu_supports("avxvnni");
    case Q8Isa::kAvx512Vnni:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    default: {
      // The tiles' state must also be granted by the OS, once per process.
      static const bool granted = CpuHasAmxInt8() && amx::GrantTiles();
      return granted && CpuRunsQ8Isa(Q8Isa::kAvx512Vnni);
    }
  }
}

std::optional<Q8Isa> BestQ8Isa() {
  // ARBOR_Q8_ISA=amx|avx512-vnni|avx-vnni|avx2 caps the choice, to compare the kernels on one
  // machine. Any other value is ignored with a warning: a typo must not silently cost the 8-bit
  // kernels.
  static const std::optional<Q8Isa> best = []() -> std::optional<Q8Isa> {
    constexpr Q8Isa kFastestFirst[] = {Q8Isa::kAmx, Q8Isa::kAvx512Vnni, Q8Isa::kAvxVnni,
                                       Q8Isa::kAvx2};
    const char* cap = std::getenv("ARBOR_Q8_ISA");
    const Q8Isa* const end = std::end(kFastestFirst);
    const Q8Isa* named = std::find_if(std::begin(kFastestFirst), end, [cap](Q8Isa isa) {
      return cap != nullptr && std::strcmp(cap, Q8IsaName(isa)) == 0;
    });
    if (cap != nullptr && *cap != '\0' && named == end) {
      std::fprintf(
          stderr, "ARBOR_Q8_ISA=%s is not one of amx, avx512-vnni, avx-vnni, avx2: ignored\n", cap);
    }
    // From the cap (or the fastest) down, the first this CPU runs.
    for (const Q8Isa* isa = named == end ? std::begin(kFastestFirst) : named; isa != end; ++isa) {
      if (CpuRunsQ8Isa(*isa)) return *isa;
    }
    return std::nullopt;
  }();
  return best;
}

std::optional<Q8Isa> Q8IsaForRows(int64_t rows, bool batch_invariant) {
  std::optional<Q8Isa> best = BestQ8Isa();
  if (batch_invariant) return best == Q8Isa::kAmx ? Q8Isa::kAvx512Vnni : best;
  if (best == Q8Isa::kAmx && rows >= kAmxMinRows) return best;
  if (best == Q8Isa::kAmx) best = Q8Isa::kAvx512Vnni;  // AMX implies AVX-512 VNNI here.
  if (best != Q8Isa::kAvx512Vnni || rows >= 4) return best;
  return CpuRunsQ8Isa(Q8Isa::kAvxVnni) ? Q8Isa::kAvxVnni : Q8Isa::kAvx2;
}

bool KQuantTilesForRows(int64_t rows) {
  return BestQ8Isa() == Q8Isa::kAmx && rows >= kAmxKQuantMinRows;
}

std::string Q8KernelsSummary(bool batch_invariant) {
  if (!BestQ8Isa()) return "none (no AVX2: quantized matrices run in fp32)";
  // The repacked rows first: nearly every matrix of a quantized file, in either numerics.
  std::string summary =
      std::string("repacked rows: ") + Q8IsaName(*Q8IsaForRows(1)) + " at every row count" +
      (KQuantTilesForRows(kAmxKQuantMinRows) ? ", K-quants on amx with the same bits from " +
                                                   std::to_string(kAmxKQuantMinRows) + " rows"
                                             : "");
  if (batch_invariant) return summary + "; per-256 activations for Q4_K and Q6_K";
  summary += "; file blocks: ";
  Q8Isa current = *Q8IsaForRows(1, false);
  std::string blocks;
  for (int64_t rows : {int64_t{4}, kAmxMinRows}) {
    const Q8Isa next = *Q8IsaForRows(rows, false);
    if (next == current) continue;
    blocks += std::string(Q8IsaName(current)) + " below " + std::to_string(rows) + " rows, ";
    current = next;
  }
  summary += blocks + Q8IsaName(current) + (blocks.empty() ? "" : " from there");
  // Where QuantMatmul takes the per-256 path instead (TakesQ8K), by row count.
  std::string k_quants = "; Q4_K and Q6_K: per-256 activations";
  for (int64_t rows : {kQ8KMaxRows + 1, kAmxMinRows}) {
    if (!TakesQ8K({.w_type = WeightType::kQ4_K, .m = rows, .batch_invariant = false})) {
      return summary + k_quants + " below " + std::to_string(rows) + " rows";
    }
  }
  return summary + k_quants + " below " + std::to_string(kQ8KMaxRows + 1) +
         " rows on avx2, from there on avx512-vnni";
}

void QuantMatmulQ8(const MatmulParams& p, Q8Isa isa, ThreadPool* pool) {
  const MatmulOutput output{p.w, p.w_type, p.out, p.n, p.out_stride};
  QuantMatmulQ8Group(p, {&output, 1}, isa, pool);
}

void QuantMatmulQ8Group(const MatmulParams& p, std::span<const MatmulOutput> outputs, Q8Isa isa,
                        ThreadPool* pool) {
  if (p.m == 0 || outputs.empty()) return;
  thread_local Q8Buffers buffers;
  const Q8Rows x = buffers.Rows(p.m, p.k);
  // Repacked matrices run their own kernel over whole groups of sixteen rows (or pairs of
  // them): their widths count those units. (Inline storage: a decode step makes a few hundred of
  // these calls.)
  absl::InlinedVector<Q8DotParams, 4> dots;
  absl::InlinedVector<int64_t, 4> widths, units;
  int64_t unit = 1;
  for (const MatmulOutput& output : outputs) {
    dots.push_back(
        {output.w, output.w_type, x, p.m, output.out, output.out_stride, p.batch_invariant});
    units.push_back(RowsPerUnit(output.w_type, p.m, output.n));
    widths.push_back(output.n / units.back());
    unit = std::max(unit, units.back());
  }
  if (pool == nullptr) {
    avx2::QuantizeQ8Rows(p.x, p.x_stride, 0, p.m, x);
  } else {
    // Quantizing is ~1/n of the multiply's work: threads only pay off on prefill-sized inputs.
    pool->ParallelFor(p.m, std::max<int64_t>(1, 16384 / p.k), [&](int64_t begin, int64_t end) {
      avx2::QuantizeQ8Rows(p.x, p.x_stride, begin, end, x);
    });
  }
  // ~64k multiply-adds per hand-off, as the float matmul (a repacked group is eight columns).
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, p.m * p.k) / unit);
  const Kernels kernels = KernelsOf(isa);
  ForGroupedColumns(widths, grain, pool, [&](size_t g, int64_t begin, int64_t end) {
    const int64_t rows = units[g];
    (rows == 1 ? kernels.file : kernels.repacked)(dots[g], begin * rows, end * rows);
  });
}

}  // namespace arbor::kernels
