// Entropix metrics throughput: logits over a 128,256-wide row (fp32 and bf16) and attention
// statistics over 32 heads × 4,096 keys, against a plain memory-read baseline over the same
// bytes measured in the same run (bytes_per_second of each case; see docs/PERFORMANCE.md).
// Also the sampler's ADAPTIVE draw (the worker's most common per-row policy work) over a full
// row of the tiny model's vocabulary (512) and of Llama 3's (128,256), flat and peaked.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "base/bf16.h"
#include "entropix/attention_metrics.h"
#include "entropix/logit_metrics.h"
#include "entropix/sampler.h"

namespace arbor::entropix {
namespace {

constexpr int kVocab = 128256;
constexpr int kHeads = 32, kKeys = 4096;

std::vector<float> RandomFloats(size_t n, float scale) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Baseline: sum every float of the buffer into 16 independent lanes (the least work that reads
// all its bytes; the lanes let the compiler vectorise without reassociating one sum).
void ReadBaseline(benchmark::State& state, size_t floats) {
  const std::vector<float> data = RandomFloats(floats, 1.0f);
  for (auto _ : state) {
    float lanes[16] = {};
    for (size_t i = 0; i + 16 <= floats; i += 16) {
      for (int l = 0; l < 16; ++l) lanes[l] += data[i + l];
    }
    benchmark::DoNotOptimize(lanes);
  }
  state.SetBytesProcessed(state.iterations() * floats * sizeof(float));
}

void BM_ReadBaseline_Row(benchmark::State& state) { ReadBaseline(state, kVocab); }
void BM_ReadBaseline_Scores(benchmark::State& state) { ReadBaseline(state, kHeads * kKeys); }

void BM_LogitMetrics_F32(benchmark::State& state) {
  const std::vector<float> row = RandomFloats(kVocab, 4.0f);
  for (auto _ : state) {
    auto m = ComputeLogitMetrics(row.data(), kVocab, static_cast<int>(state.range(0)));
    benchmark::DoNotOptimize(m);
  }
  state.SetBytesProcessed(state.iterations() * kVocab * sizeof(float));
}

void BM_LogitMetrics_Bf16(benchmark::State& state) {
  const std::vector<float> wide = RandomFloats(kVocab, 4.0f);
  std::vector<uint16_t> row(kVocab);
  for (int i = 0; i < kVocab; ++i) row[i] = base::FloatToBf16(wide[i]);
  for (auto _ : state) {
    auto m = ComputeLogitMetrics(row.data(), kVocab, static_cast<int>(state.range(0)));
    benchmark::DoNotOptimize(m);
  }
  state.SetBytesProcessed(state.iterations() * kVocab * sizeof(uint16_t));
}

void BM_AttentionMetrics(benchmark::State& state) {
  const std::vector<float> scores = RandomFloats(kHeads * kKeys, 2.0f);
  const AttentionMode mode = state.range(0) ? AttentionMode::kReference : AttentionMode::kExact;
  for (auto _ : state) {
    auto m = ComputeAttentionMetrics(scores.data(), kHeads, kKeys, kKeys, mode, 8192);
    benchmark::DoNotOptimize(m);
  }
  state.SetBytesProcessed(state.iterations() * kHeads * kKeys * sizeof(float));
}

// Args: vocabulary size, logit standard deviation × 10 (5: flat, many tokens survive min_p;
// 40: peaked, few do). Canonical sampling parameters, 5 samples.
void BM_SampleAdaptive(benchmark::State& state) {
  const int vocab = static_cast<int>(state.range(0));
  const std::vector<float> row = RandomFloats(vocab, state.range(1) / 10.0f);
  const LogitMetrics metrics = *ComputeLogitMetrics(row.data(), vocab, 0);
  const Candidates candidates{row, {}, metrics.logsumexp};
  uint32_t position = 0;
  for (auto _ : state) {
    auto sample =
        SampleAdaptive(candidates, SamplingParams{}, 5, 0.0, RngKey{1, ++position, 0, 0}, {});
    benchmark::DoNotOptimize(sample);
  }
  state.SetBytesProcessed(state.iterations() * vocab * sizeof(float));
}

BENCHMARK(BM_ReadBaseline_Row);
BENCHMARK(BM_LogitMetrics_F32)->Arg(1)->Arg(64);
BENCHMARK(BM_LogitMetrics_Bf16)->Arg(64);
BENCHMARK(BM_ReadBaseline_Scores);
BENCHMARK(BM_AttentionMetrics)->Arg(0)->Arg(1);
BENCHMARK(BM_SampleAdaptive)->ArgsProduct({{512, kVocab}, {5, 40}});

}  // namespace
}  // namespace arbor::entropix

BENCHMARK_MAIN();
