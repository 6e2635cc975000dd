// Worker benchmarks: CPU backend decode tokens/s at batch 1, 8 and 32 and prefill tokens/s on
// random in-memory models, each beside this machine's memory-read bandwidth measured in the same
// run (a decode step streams every weight once, so weight bytes / bandwidth bounds its time);
// and the KV blocks held by 16 branches forked from a long prefix vs the unique-token minimum.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "kernels/cpu_simd.h"
#include "kernels/thread_pool.h"
#include "tests/worker/random_llama.h"
#include "worker/cpu_backend.h"
#include "worker/kv_cache.h"

namespace arbor::worker {
namespace {

int Threads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

// Streaming read bandwidth (bytes/s) of a 512 MiB buffer summed by all threads: the roofline a
// weight-streaming decode step can at best reach.
double MeasureReadBandwidth() {
  const size_t n = size_t{512} << 20 >> 2;
  std::vector<float> data(n, 1.0f);
  kernels::ThreadPool pool(Threads());
  std::vector<float> ones(4096, 1.0f);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    std::atomic<double> sink{0};
    const auto start = std::chrono::steady_clock::now();
    pool.ParallelFor(static_cast<int64_t>(n / 4096), 64, [&](int64_t begin, int64_t end) {
      float sum = 0;
      for (int64_t i = begin; i < end; ++i) sum += kernels::simd::Dot(&data[i * 4096], ones.data(), 4096);
      sink.store(sink.load() + sum);
    });
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    benchmark::DoNotOptimize(sink.load());
    best = std::max(best, n * sizeof(float) / seconds);
  }
  return best;
}

double g_bandwidth = 0;

model::ModelConfig SmallConfig() {
  model::ModelConfig c = testing::TinyConfig();
  c.name = "small";
  c.num_layers = 4;
  c.hidden_size = 256;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.head_dim = 32;
  c.intermediate_size = 688;
  c.vocab_size = 2048;
  return c;
}

struct Fixture {
  std::unique_ptr<testing::RandomLlama> model;
  std::unique_ptr<CpuBackend> backend;
};

// Models are built once per (shape, dtype) and kept for every benchmark of the run.
Fixture& Get(int shape, bool bf16) {
  static std::map<std::pair<int, bool>, Fixture> fixtures;
  Fixture& f = fixtures[{shape, bf16}];
  if (f.backend == nullptr) {
    std::mt19937 rng(42);
    f.model = std::make_unique<testing::RandomLlama>(shape == 0 ? testing::TinyConfig()
                                                                : SmallConfig(),
                                                     bf16, rng);
    f.backend = std::move(CpuBackend::Create(f.model->config(), f.model->Lookup(),
                                             {.kv_blocks = 4096, .block_size = 16,
                                              .threads = Threads()})
                              .value());
  }
  return f;
}

// Decode: `batch` sequences with a 128-token context each take one token per step.
void BM_Decode(benchmark::State& state) {
  Fixture& f = Get(state.range(0), state.range(1));
  const int batch = state.range(2);
  const int vocab = f.model->config().vocab_size;
  KvCache kv(f.backend.get());
  std::vector<int32_t> prompt(128);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = (i * 7919) % vocab;
  for (int s = 0; s < batch; ++s) {
    prompt[0] = s;  // Distinct sequences: no prefix sharing in this benchmark.
    if (!kv.Create(s).ok() || !kv.Append(s, prompt).ok()) state.SkipWithError("KV setup");
    // Prefill content does not matter for a decode step's cost; the cache slots exist.
  }
  std::vector<std::vector<float>> logits(batch, std::vector<float>(vocab));
  const std::vector<int32_t> next = {1};
  for (auto _ : state) {
    std::vector<ForwardRow> rows;
    for (int s = 0; s < batch; ++s) {
      if (!kv.Append(s, next).ok()) state.SkipWithError("append");
      const KvSequence* seq = *kv.Find(s);
      rows.push_back({.tokens = next, .start_pos = static_cast<int32_t>(seq->tokens.size()) - 1,
                      .block_table = seq->blocks, .logits = logits[s].data()});
    }
    if (!f.backend->Forward(rows).ok()) state.SkipWithError("forward");
    for (int s = 0; s < batch; ++s) {
      if (!kv.Truncate(s, 128).ok()) state.SkipWithError("truncate");
    }
  }
  for (int s = 0; s < batch; ++s) (void)kv.Release(s);
  state.counters["tok/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * batch, benchmark::Counter::kIsRate);
  state.counters["weight_MB"] = f.backend->weight_bytes() / 1e6;
  // Fraction of the bandwidth bound: weight bytes per step / step time / measured bandwidth.
  state.counters["bw_frac"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * f.backend->weight_bytes() / g_bandwidth,
      benchmark::Counter::kIsRate);
}

// Prefill: one 256-token prompt per iteration, in a fresh sequence.
void BM_Prefill(benchmark::State& state) {
  Fixture& f = Get(state.range(0), state.range(1));
  const int vocab = f.model->config().vocab_size;
  KvCache kv(f.backend.get());
  std::vector<int32_t> prompt(256);
  std::vector<float> logits(vocab);
  SeqId id = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = (i * 31 + id * 17) % vocab;
    if (!kv.Create(id).ok() || !kv.Append(id, prompt).ok()) state.SkipWithError("KV setup");
    const KvSequence* seq = *kv.Find(id);
    ForwardRow row{.tokens = prompt, .start_pos = 0, .block_table = seq->blocks,
                   .logits = logits.data()};
    if (!f.backend->Forward({&row, 1}).ok()) state.SkipWithError("forward");
    (void)kv.Release(id++);
  }
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * 256,
                                               benchmark::Counter::kIsRate);
}

// 16 branches forked from a prefix, each then decoding 32 tokens: KV blocks held vs the minimum
// any paged cache needs for the distinct tokens, and vs no sharing at all.
void BM_KvBranches(benchmark::State& state) {
  const int32_t prefix = state.range(0), branches = 16, decode = 32, bs = 16;
  KvStats held;
  for (auto _ : state) {
    KvBlockManager kv(4096, bs);
    std::vector<int32_t> tokens(prefix);
    for (int32_t i = 0; i < prefix; ++i) tokens[i] = i;
    (void)kv.Create(0);
    (void)kv.Append(0, tokens);
    for (int b = 1; b <= branches; ++b) {
      (void)kv.Fork(0, b, prefix);
      for (int i = 0; i < decode; ++i) (void)kv.Append(b, std::vector<int32_t>{b * 1000 + i});
    }
    (void)kv.Release(0);
    held = kv.stats();
  }
  const int64_t unique_min = (prefix + bs - 1) / bs + branches * ((decode + bs - 1) / bs);
  state.counters["blocks_held"] = held.used_blocks;
  state.counters["unique_min_blocks"] =
      (prefix + int64_t{branches} * decode + bs - 1) / bs;  // Tokens packed with no block slack.
  state.counters["min_paged_blocks"] = unique_min;
  state.counters["unshared_blocks"] = branches * ((prefix + decode + bs - 1) / bs);
}

// Args: shape (0 tiny, 1 small), bf16, batch.
BENCHMARK(BM_Decode)->ArgsProduct({{0, 1}, {0, 1}, {1, 8, 32}})->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Prefill)->ArgsProduct({{0, 1}, {0, 1}})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_KvBranches)->Arg(1024)->Arg(1000)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace arbor::worker

int main(int argc, char** argv) {
  arbor::worker::g_bandwidth = arbor::worker::MeasureReadBandwidth();
  std::printf("memory read bandwidth: %.2f GB/s (%d threads)\n", arbor::worker::g_bandwidth / 1e9,
              arbor::worker::Threads());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
