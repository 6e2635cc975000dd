// arbor-bench-quant-matmul: the quantized matmul (kernels/quant/quant_matmul.h) on one thread, in
// the exact fp32 mode and in the 8-bit-activation mode on each instruction set this CPU runs, on
// SmolLM2-135M's matrix shapes (random blocks with realistic scales: speed does not depend on
// the values). Reports multiply-adds per second (`GMAC/s`) over the thread's CPU time, which a
// busy machine disturbs less than the wall-clock decode figures of arbor-bench-worker.
//
//   arbor-bench-quant-matmul --benchmark_filter=Q4_1
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "bench/kernels/random_quant_blocks.h"
#include "kernels/quant/quant_blocks.h"
#include "kernels/quant/quant_matmul.h"
#include "kernels/quant/repacked_rows.h"
#include "model/dtype.h"

namespace arbor::kernels {
namespace {

// Modes, the benchmark's third argument: 0 fp32, then 1 + Q8Isa, then the per-256 activations of
// QuantMatmulQ8K (Q4_K and Q6_K only; AVX2 up to kQ8KMaxRows rows, else AVX-512 where it runs),
// then what the worker runs in 8-bit mode: QuantMatmul's batch-invariant dispatch
// (--numerics=invariant) and its fastest-for-m one (--numerics=fast) on the file's blocks, and
// the invariant dispatch on the rows repacked in groups (repacked_rows.h), which is what the
// worker multiplies where it repacks (any CPU with AVX2; ARBOR_Q8_ISA caps the instruction set).
constexpr int kModes = 9;
constexpr int kQ8KMode = 5;
constexpr int kInvariantMode = 6;
constexpr int kFastMode = 7;
constexpr int kRepackedMode = 8;

struct Shape {
  WeightType type;
  int64_t n, k;
};
// SmolLM2-135M: gate/up (Q4_1 1536 × 576), down (Q4_1 576 × 1536), the Q8_0 head (49,152 × 576,
// 30 MB: it streams from L3 or memory), and K-quant rows as its Q4_K_M mix has them; then the
// Llama-3.2-1B shape's Q4_K_M gate/up (Q4_K 8192 × 2048) and down (Q6_K 2048 × 8192), and its
// Q8_0 q_proj (2048 × 2048), and its Q5_K_M gate/up (Q5_K 8192 × 2048); SmolLM2's gate/up shape
// in Q5_0.
constexpr Shape kShapes[] = {{WeightType::kQ4_1, 1536, 576},  {WeightType::kQ4_1, 576, 1536},
                             {WeightType::kQ8_0, 49152, 576}, {WeightType::kQ4_K, 576, 1536},
                             {WeightType::kQ6_K, 576, 1536},  {WeightType::kQ4_K, 8192, 2048},
                             {WeightType::kQ6_K, 2048, 8192}, {WeightType::kQ8_0, 2048, 2048},
                             {WeightType::kQ5_K, 8192, 2048}, {WeightType::kQ5_0, 1536, 576}};

void BM_QuantMatmul(benchmark::State& state) {
  const Shape shape = kShapes[state.range(0)];
  const int64_t m = state.range(1);
  const int mode = static_cast<int>(state.range(2));
  const model::DType dtype = FileDType(shape.type);
  if (mode == kQ8KMode && shape.type != WeightType::kQ4_K && shape.type != WeightType::kQ6_K) {
    state.SkipWithError("per-256 activations serve Q4_K and Q6_K");
    return;
  }
  if (mode == kRepackedMode && (!CpuRunsRepacked() || !Repackable(shape.type, shape.n, shape.k))) {
    state.SkipWithError("not repacked on this CPU, or not a repacked type");
    return;
  }
  const bool dispatch = mode == kInvariantMode || mode == kFastMode || mode == kRepackedMode;
  const Q8Isa isa = mode == kQ8KMode || dispatch ? Q8Isa::kAvx2 : static_cast<Q8Isa>(mode - 1);
  if (mode > 0 && !CpuRunsQ8Isa(isa)) {
    state.SkipWithError("instruction set not on this CPU");
    return;
  }
  std::mt19937 rng(1);
  std::vector<char> w = bench::RandomQuantBlocks(shape.type, shape.n, shape.k, rng);
  if (mode == kRepackedMode) w = RepackRows(shape.type, w.data(), shape.n, shape.k);
  std::normal_distribution<float> normal;
  std::vector<float> x(m * shape.k), out(m * shape.n);
  for (float& v : x) v = normal(rng);
  const MatmulParams p{.x = x.data(),
                       .w = w.data(),
                       .w_type = mode == kRepackedMode ? RepackedType(shape.type) : shape.type,
                       .out = out.data(),
                       .m = m,
                       .n = shape.n,
                       .k = shape.k,
                       .x_stride = shape.k,
                       .out_stride = shape.n,
                       .activation_quant = dispatch ? ActivationQuant::kQ8 : ActivationQuant::kF32,
                       .batch_invariant = mode == kInvariantMode || mode == kRepackedMode};
  for (auto _ : state) {
    if (mode == 0 || dispatch) {
      QuantMatmul(p, nullptr);
    } else if (mode == kQ8KMode) {
      QuantMatmulQ8K(p, nullptr);
    } else {
      QuantMatmulQ8(p, isa, nullptr);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(std::string(model::DTypeName(dtype)) + " " + std::to_string(shape.n) + "x" +
                 std::to_string(shape.k) + " " +
                 (mode == 0                ? "f32"
                  : mode == kQ8KMode       ? "per-256"
                  : mode == kInvariantMode ? "q8 invariant"
                  : mode == kFastMode      ? "q8 fast"
                  : mode == kRepackedMode  ? "q8 repacked"
                                           : Q8IsaName(isa)));
  state.counters["GMAC/s"] =
      benchmark::Counter(static_cast<double>(m * shape.n * shape.k) * state.iterations() / 1e9,
                         benchmark::Counter::kIsRate);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int s = 0; s < static_cast<int>(std::size(kShapes)); ++s) {
    for (int m : {1, 3, 8, 12, 16, 32, 256}) {
      for (int mode = 0; mode < kModes; ++mode) b->Args({s, m, mode});
    }
    // A long prompt's prefill, whose activations outgrow a core's L2 cache: what the worker
    // multiplies only.
    b->Args({s, 2048, kRepackedMode});
  }
}
BENCHMARK(BM_QuantMatmul)->Apply(Args);

}  // namespace
}  // namespace arbor::kernels

BENCHMARK_MAIN();
