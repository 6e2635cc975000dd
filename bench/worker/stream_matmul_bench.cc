// One-row matmuls streaming their weights from memory, in arbor-bench-worker: what the
// quantized kernels and the thread pool alone make of the memory's bandwidth, beside the best
// streaming read of the same threads in the same minutes (read_bandwidth.h). A batch-1 decode
// step is these matmuls plus everything else (attention, norms, the activations' quantization,
// the hand-offs between ops): its `bw_frac` against this one's `read_frac` says how much of the
// step's distance to the memory bound is the kernels' and how much the rest's.
//
// The weights: one random matrix of a file type and shape, repacked as the CPU backend repacks
// it and copied into huge pages (base::HugePageArena, as the backend holds its weights) until
// the copies fill 8 last-level caches, or 1 GiB; an iteration multiplies one activation row by
// every copy in turn, each a QuantMatmul on the pool with the worker's default numerics.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/huge_page_arena.h"
#include "bench/kernels/random_quant_blocks.h"
#include "bench/worker/paired_reads.h"
#include "bench/worker/read_bandwidth.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_matmul.h"
#include "kernels/quant/repacked_rows.h"

namespace arbor::worker {
namespace {

using kernels::WeightType;

struct Case {
  WeightType type;
  int64_t n, k;
  const char* what;
};
// The 1B shape's gate/up in Q4_K and down in Q6_K (its Q4_K_M file), its gate/up in Q8_0, and
// SmolLM2's gate/up in Q4_1, whose small matrices a step meets one after another; and the same
// rows four times as many, so that the two Q4_1 cases' rates in one run give what each matmul
// costs beyond its bytes (the hand-off, the last chunks, the first reads).
constexpr Case kCases[] = {{WeightType::kQ4_K, 8192, 2048, "Q4_K 8192x2048"},
                           {WeightType::kQ6_K, 2048, 8192, "Q6_K 2048x8192"},
                           {WeightType::kQ8_0, 8192, 2048, "Q8_0 8192x2048"},
                           {WeightType::kQ4_1, 1536, 576, "Q4_1 1536x576"},
                           {WeightType::kQ4_1, 6144, 576, "Q4_1 6144x576"}};

// The copies of one matrix (random blocks), repacked where this CPU repacks.
struct Copies {
  base::HugePageArena arena;
  std::vector<const char*> matrices;
  WeightType type = WeightType::kQ4_K;
  size_t bytes = 0;  // Of one copy.
};

std::string MakeCopies(const Case& c, Copies& copies) {
  std::mt19937 rng(1);
  std::vector<char> w = bench::RandomQuantBlocks(c.type, c.n, c.k, rng);
  copies.type = c.type;
  if (kernels::CpuRunsRepacked() && kernels::Repackable(c.type, c.n, c.k)) {
    w = kernels::RepackRows(c.type, w.data(), c.n, c.k);
    copies.type = kernels::RepackedType(c.type);
  }
  copies.bytes = w.size();
  while (copies.matrices.size() * copies.bytes < StreamingBytes()) {
    absl::StatusOr<char*> at = copies.arena.Allocate(copies.bytes);
    if (!at.ok()) return std::string(at.status().message());
    std::memcpy(*at, w.data(), w.size());
    copies.matrices.push_back(*at);
  }
  return "";
}

// Arg: the case. Reports the weights' GB/s and `read_frac`, that over the best read of these
// minutes (the faster of the reads right before and after the timed loop), and `read_paired`,
// against the reads of the same moments (paired_reads.h).
void BM_StreamMatmul(benchmark::State& state) {
  const Case& c = kCases[state.range(0)];
  Copies copies;
  if (const std::string error = MakeCopies(c, copies); !error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  kernels::ThreadPool pool(RunThreads());
  std::vector<float> x(c.k), out(c.n);
  std::normal_distribution<float> normal;
  std::mt19937 rng(2);
  for (float& v : x) v = normal(rng);
  const double bytes = static_cast<double>(copies.bytes * copies.matrices.size());
  double bandwidth = RunRoofline().MeasureAgain();
  PairedReads paired(RunRoofline());
  for (auto _ : state) {
    for (const char* w : copies.matrices) {
      const kernels::MatmulParams p{.x = x.data(),
                                    .w = w,
                                    .w_type = copies.type,
                                    .out = out.data(),
                                    .m = 1,
                                    .n = c.n,
                                    .k = c.k,
                                    .x_stride = c.k,
                                    .out_stride = c.n,
                                    .activation_quant = kernels::ActivationQuant::kQ8,
                                    .batch_invariant = true};
      kernels::QuantMatmul(p, &pool);
    }
    benchmark::DoNotOptimize(out.data());
    paired.Iteration(state, bytes);
  }
  const double paired_frac = paired.Finish();
  bandwidth = std::max(bandwidth, RunRoofline().MeasureAgain());
  state.SetLabel(c.what);
  state.counters["GBps"] =
      benchmark::Counter(state.iterations() * bytes / 1e9, benchmark::Counter::kIsRate);
  if (bandwidth > 0) {
    state.counters["read_frac"] =
        benchmark::Counter(state.iterations() * bytes / bandwidth, benchmark::Counter::kIsRate);
    state.counters["read_paired"] = paired_frac;
  }
}

BENCHMARK(BM_StreamMatmul)
    ->DenseRange(0, static_cast<int>(std::size(kCases)) - 1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace arbor::worker
