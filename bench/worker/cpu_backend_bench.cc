// Worker benchmarks: CPU backend decode tokens/s at batch 1, 8 and 32 and prefill tokens/s on
// random in-memory models, each beside the best streaming read of the same threads measured in
// the same run (read_bandwidth.h: a decode step streams every weight once, so weight bytes /
// bandwidth bounds its time); the KV blocks held by 16 branches forked from a long prefix vs the
// unique-token minimum (the attention op alone: attention_bench.cc, and one-row matmuls
// streaming from memory: stream_matmul_bench.cc, in the same binary); with --model, where a
// decode step's and a prefill's time go, op by op.
//
// With --with_1b, the same decode and prefill cases also run on the llama-3.2-1b-shape preset in
// bf16 (~2.5 GB): a make-model checkpoint kept in a cache directory between runs and served
// memory-mapped through the checkpoint loader, as arbor-worker serves it. It is slow to write
// once and to step on a few cores, so the default run leaves it out.
//
// With --model=NAME|FILE|DIR, the same cases run on that checkpoint as arbor-worker loads it
// (e.g. --model=smollm2-135m-instruct, the default real model); its load time and the resident
// memory it adds are printed first.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "base/flags.h"
#include "base/status_macros.h"
#include "bench/worker/paired_reads.h"
#include "bench/worker/read_bandwidth.h"
#include "entropix/logit_metrics.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/quant/quant_matmul.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "model/model_store.h"
#include "tests/worker/backend/random_llama.h"
#include "worker/backend/cpu_backend.h"
#include "worker/backend/numerics_flags.h"
#include "worker/kv/kv_cache.h"

ABSL_FLAG(bool, with_1b, false,
          "Also benchmark the llama-3.2-1b-shape preset in bf16 (decode at batch 1, 8, 32 and a "
          "256-token prefill; ~2.5 GB checkpoint, written on first use into --model_1b_dir).");
ABSL_FLAG(std::string, model_1b_dir, "",
          "Checkpoint directory of the llama-3.2-1b-shape bf16 model: reused when it loads with "
          "that preset's shapes in bf16, else (re)written there with make-model. Default: "
          "arbor-bench-llama-3.2-1b-shape-bf16 in the system temp directory.");

ABSL_FLAG(std::string, model, "",
          "Also benchmark this model (a GGUF file, a Hugging Face directory or a known name such "
          "as smollm2-135m-instruct): decode at batch 1, 8, 32 and a 256-token prefill.");

namespace arbor::worker {
namespace {

// Model shapes, the first benchmark argument.
enum Shape { kTiny = 0, kSmall = 1, kLlama1b = 2, kModel = 3 };
constexpr char kLlama1bPreset[] = "llama-3.2-1b-shape";

// The llama-3.2-1b-shape bf16 checkpoint, opened from --model_1b_dir. A directory that does not
// load, or loads with other shapes or dtype, is (re)written with make-model first: its weights
// file only appears once complete, so an interrupted write is simply redone on the next run.
absl::StatusOr<std::unique_ptr<model::Checkpoint>> OpenLlama1b() {
  std::string dir = absl::GetFlag(FLAGS_model_1b_dir);
  if (dir.empty()) {
    dir = (std::filesystem::temp_directory_path() / "arbor-bench-llama-3.2-1b-shape-bf16").string();
  }
  ASSIGN_OR_RETURN(const model::ModelConfig want, model::PresetConfig(kLlama1bPreset));
  auto fits = [&want](const model::Checkpoint& c) {
    const model::ModelConfig& got = c.config();
    return got.num_layers == want.num_layers && got.hidden_size == want.hidden_size &&
           got.num_heads == want.num_heads && got.num_kv_heads == want.num_kv_heads &&
           got.head_dim == want.head_dim && got.intermediate_size == want.intermediate_size &&
           got.vocab_size == want.vocab_size &&
           got.tie_word_embeddings == want.tie_word_embeddings &&
           c.LmHead().dtype == model::DType::kBF16;
  };
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  absl::StatusOr<std::unique_ptr<model::Checkpoint>> checkpoint = model::Checkpoint::Open(dir);
  if (!checkpoint.ok() || !fits(**checkpoint)) {
    checkpoint = nullptr;  // Unmap before the files are overwritten.
    std::printf("writing the %s bf16 checkpoint into %s\n", kLlama1bPreset, dir.c_str());
    std::fflush(stdout);
    model::MakeModelOptions options;
    options.preset = kLlama1bPreset;
    options.out_dir = dir;
    options.seed = 1;
    options.dtype = model::DType::kBF16;
    RETURN_IF_ERROR(model::MakeModel(options).status());
    std::printf("written in %.1f s\n", std::chrono::duration<double>(Clock::now() - start).count());
    start = Clock::now();
    ASSIGN_OR_RETURN(checkpoint, model::Checkpoint::Open(dir));
  }
  std::printf("%s opened from %s in %.1f s (%.2f GB of weights, every byte checked)\n",
              kLlama1bPreset, dir.c_str(),
              std::chrono::duration<double>(Clock::now() - start).count(),
              (*checkpoint)->weight_bytes() / 1e9);
  std::fflush(stdout);
  return std::move(checkpoint).value();
}

// Resident memory of this process, bytes (VmRSS).
int64_t ResidentBytes() {
  std::FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return 0;
  char line[256];
  long long kb = 0;
  while (std::fgets(line, sizeof(line), status) != nullptr) {
    if (std::sscanf(line, "VmRSS: %lld kB", &kb) == 1) break;
  }
  std::fclose(status);
  return kb * 1024;
}

// The --model checkpoint in a CPU backend, timed and measured as arbor-worker would load it.
absl::StatusOr<std::unique_ptr<CpuBackend>> OpenModel() {
  using Clock = std::chrono::steady_clock;
  ASSIGN_OR_RETURN(const std::string path, model::ResolveModel(absl::GetFlag(FLAGS_model)));
  const int64_t rss_before = ResidentBytes();
  const Clock::time_point start = Clock::now();
  ASSIGN_OR_RETURN(std::unique_ptr<model::Checkpoint> checkpoint, model::Checkpoint::Open(path));
  const double open_s = std::chrono::duration<double>(Clock::now() - start).count();
  const uint64_t file_bytes = checkpoint->weight_bytes();
  const NumericsFlags numerics = NumericsFlagsFromFlags();
  ASSIGN_OR_RETURN(const WeightsDtype dtype, ParseWeightsDtype(numerics.weights_dtype));
  ASSIGN_OR_RETURN(const kernels::ActivationQuant activation_quant,
                   ParseActivationQuant(numerics.activation_quant));
  ASSIGN_OR_RETURN(const bool batch_invariant, ParseNumerics(numerics.numerics));
  ASSIGN_OR_RETURN(
      std::unique_ptr<CpuBackend> backend,
      CpuBackend::Create(std::shared_ptr<const model::Checkpoint>(std::move(checkpoint)),
                         {.kv_blocks = 512,
                          .block_size = 16,
                          .threads = RunThreads(),
                          .weights_dtype = dtype,
                          .activation_quant = activation_quant,
                          .batch_invariant = batch_invariant}));
  std::printf("--activation_quant=%s --numerics=%s (8-bit kernels: %s)\n",
              numerics.activation_quant.c_str(), numerics.numerics.c_str(),
              kernels::Q8KernelsSummary(batch_invariant).c_str());
  std::printf(
      "%s (--weights_dtype=%s: %s): opened and checked in %.2f s, backend ready after %.2f s; "
      "%.1f MB of weights in the file, %.1f MB streamed per decode step, %.1f MB converted at "
      "load; resident memory +%.0f MB (KV pools included)\n",
      path.c_str(), numerics.weights_dtype.c_str(), backend->weight_types().c_str(), open_s,
      std::chrono::duration<double>(Clock::now() - start).count(), file_bytes / 1e6,
      backend->weight_bytes() / 1e6, backend->converted_bytes() / 1e6,
      (ResidentBytes() - rss_before) / 1e6);
  std::fflush(stdout);
  return backend;
}

struct Fixture {
  std::unique_ptr<testing::RandomLlama> model;  // Owner of the weights of the random models.
  std::unique_ptr<CpuBackend> backend;
  std::string error;  // Why `backend` could not be made.
};

// Models are built once per (shape, dtype) and kept for every benchmark of the run.
Fixture& Get(int shape, bool bf16) {
  static std::map<std::pair<int, bool>, Fixture> fixtures;
  Fixture& f = fixtures[{shape, bf16}];
  if (f.backend != nullptr || !f.error.empty()) return f;
  absl::StatusOr<std::unique_ptr<CpuBackend>> backend;
  if (shape == kModel) {
    backend = OpenModel();
  } else if (shape == kLlama1b) {
    absl::StatusOr<std::unique_ptr<model::Checkpoint>> checkpoint =
        bf16 ? OpenLlama1b()
             : absl::InvalidArgumentError("the llama-3.2-1b-shape benchmarks are bf16 only");
    // 512 blocks of 16 hold batch 32 at a 129-token context; the backend allocates (and
    // zeroes) every block of its KV pools, 0.5 GiB at this shape.
    backend = checkpoint.ok()
                  ? CpuBackend::Create(
                        std::shared_ptr<const model::Checkpoint>(std::move(checkpoint).value()),
                        {.kv_blocks = 512, .block_size = 16, .threads = RunThreads()})
                  : checkpoint.status();
  } else {
    std::mt19937 rng(42);
    f.model = std::make_unique<testing::RandomLlama>(
        shape == kTiny ? testing::TinyConfig() : *model::PresetConfig("small"), bf16, rng);
    backend = CpuBackend::Create(f.model->config(), f.model->Lookup(),
                                 {.kv_blocks = 4096, .block_size = 16, .threads = RunThreads()});
  }
  if (backend.ok()) {
    f.backend = std::move(backend).value();
  } else {
    f.error = backend.status().ToString();
  }
  return f;
}

// Seconds of one row's per-step logit metrics (entropix::ComputeLogitMetrics without top-K, as
// the engine computes them on every decoded token) over `row`, on one thread.
double LogitMetricsSeconds(const std::vector<float>& row) {
  using Clock = std::chrono::steady_clock;
  int calls = 0;
  const Clock::time_point start = Clock::now();
  double seconds = 0;
  while (calls < 3 || seconds < 0.02) {
    benchmark::DoNotOptimize(
        entropix::ComputeLogitMetrics(row.data(), static_cast<int>(row.size()), /*top_k=*/0));
    ++calls;
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return seconds / calls;
}

// `batch` sequences with a `context`-token context each, stepped one token at a time and
// truncated back after each step, so every step costs the same: distinct (no prefix sharing), or
// `siblings` forked from one prompt (the branches of a search, sharing its KV blocks). Prefill
// content does not matter for a decode step's cost; the cache slots exist.
class DecodeBatch {
 public:
  DecodeBatch(benchmark::State& state, CpuBackend* backend, int batch, int context = 128,
              bool siblings = false)
      : backend_(backend),
        kv_(backend),
        logits_(batch, std::vector<float>(backend->config().vocab_size)),
        context_(context) {
    const int vocab = backend->config().vocab_size;
    std::vector<int32_t> prompt(context);
    for (int i = 0; i < context; ++i) prompt[i] = (i * 7919) % vocab;
    for (int s = 0; s < batch; ++s) {
      prompt[0] = s;
      const bool ok = siblings && s > 0 ? kv_.Fork(0, s, context).ok()
                                        : kv_.Create(s).ok() && kv_.Append(s, prompt).ok();
      if (!ok) state.SkipWithError("KV setup");
    }
  }
  ~DecodeBatch() {
    for (size_t s = 0; s < logits_.size(); ++s) (void)kv_.Release(static_cast<SeqId>(s));
  }

  // One decode step of every sequence, with `tap`; returns the forward's seconds.
  double Step(benchmark::State& state, const TensorTap& tap = {}) {
    std::vector<ForwardRow> rows;
    for (size_t s = 0; s < logits_.size(); ++s) {
      if (!kv_.Append(s, kNext).ok()) state.SkipWithError("append");
      const KvSequence* seq = *kv_.Find(s);
      rows.push_back({.tokens = kNext,
                      .start_pos = static_cast<int32_t>(seq->tokens.size()) - 1,
                      .block_table = seq->blocks,
                      .logits = logits_[s].data()});
    }
    forward_start_ = std::chrono::steady_clock::now();
    if (!backend_->Forward(rows, tap).ok()) state.SkipWithError("forward");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - forward_start_).count();
    for (size_t s = 0; s < logits_.size(); ++s) {
      if (!kv_.Truncate(s, context_).ok()) state.SkipWithError("truncate");
    }
    return seconds;
  }
  const std::vector<float>& logits(int s) const { return logits_[s]; }
  // When the last Step's forward began (set before the forward's first tap fires).
  const std::chrono::steady_clock::time_point& forward_start() const { return forward_start_; }

 private:
  inline static const std::vector<int32_t> kNext = {1};
  CpuBackend* backend_;
  KvCache kv_;
  std::vector<std::vector<float>> logits_;
  int context_;
  std::chrono::steady_clock::time_point forward_start_;
};

// Decode: `batch` sequences with a 128-token context each take one token per step.
void BM_Decode(benchmark::State& state) {
  Fixture& f = Get(state.range(0), state.range(1));
  if (f.backend == nullptr) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const int batch = state.range(2);
  // The roofline of these minutes: the faster of the reads right before and after the steps.
  double bandwidth = RunRoofline().MeasureAgain();
  double paired_frac = 0;
  {
    DecodeBatch decode(state, f.backend.get(), batch);
    PairedReads paired(RunRoofline());
    for (auto _ : state) {
      decode.Step(state);
      paired.Iteration(state, static_cast<double>(f.backend->weight_bytes()));
    }
    paired_frac = paired.Finish();
    // The step's metrics if run serially after it: batch × one row's metrics / step time. Timed
    // outside the benchmark loop, on the logits of the last step.
    state.counters["metrics_frac"] = benchmark::Counter(
        static_cast<double>(state.iterations()) * batch * LogitMetricsSeconds(decode.logits(0)),
        benchmark::Counter::kIsRate);
  }
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * batch,
                                               benchmark::Counter::kIsRate);
  state.counters["weight_MB"] = f.backend->weight_bytes() / 1e6;
  bandwidth = std::max(bandwidth, RunRoofline().MeasureAgain());
  if (bandwidth <= 0) return;  // No buffer to read could be mapped: no roofline to divide by.
  state.counters["read_GBps"] = bandwidth / 1e9;
  // Fraction of the bandwidth bound: weight bytes per step / step time / measured bandwidth.
  state.counters["bw_frac"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * f.backend->weight_bytes() / bandwidth,
      benchmark::Counter::kIsRate);
  // The same against the reads of the same moments (paired_reads.h).
  state.counters["bw_paired"] = paired_frac;
}

// Decode at a `context`-token context (arg 3): `batch` distinct sequences (BM_DecodeLong), or
// `batch` siblings forked from one prompt (BM_DecodeSiblings: the branches of a search, every
// sibling's attention reading the shared prompt's K and V), one token per step.
void DecodeAtContext(benchmark::State& state, bool siblings) {
  Fixture& f = Get(state.range(0), state.range(1));
  if (f.backend == nullptr) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const int batch = state.range(2);
  DecodeBatch decode(state, f.backend.get(), batch, state.range(3), siblings);
  for (auto _ : state) decode.Step(state);
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * batch,
                                               benchmark::Counter::kIsRate);
}
void BM_DecodeLong(benchmark::State& state) { DecodeAtContext(state, /*siblings=*/false); }
void BM_DecodeSiblings(benchmark::State& state) { DecodeAtContext(state, /*siblings=*/true); }

// Times a forward between the backend's tensor taps (backend.h), so each op's share needs no
// instrumented build. Ops: embed, norm (RMSNorm with the residual add), qkv (the three
// projections and RoPE), attention (KV append and paged attention), o_proj, gate_up (gate, up and
// SwiGLU), down, lm_head (the final norm and the logits); `rest` is the forwards' time outside
// the taps.
class OpProfile {
 public:
  using Clock = std::chrono::steady_clock;

  // The tap of forwards that each begin at `start`, read when the forward's first tap fires (each
  // tap closes the op that ran since the previous one; its name says which).
  TensorTap Tap(const Clock::time_point& start) {
    return [this, &start](std::string_view name, const float*, int64_t, int64_t) {
      const Clock::time_point now = Clock::now();
      for (const auto& [suffix, op] : kOps) {
        if (name.ends_with(suffix)) {
          seconds_[op] += std::chrono::duration<double>(now - last_.value_or(start)).count();
          break;
        }
      }
      last_ = Clock::now();
    };
  }
  // Ends a forward that took `seconds` in all.
  void EndForward(double seconds) {
    total_ += seconds;
    last_.reset();
  }

  // µs per iteration of each op, the rest and the whole forward (`step`) as counters.
  void Report(benchmark::State& state) const {
    double accounted = 0;
    for (const auto& [op, s] : seconds_) {
      state.counters[op] = s * 1e6 / state.iterations();
      accounted += s;
    }
    state.counters["rest"] = (total_ - accounted) * 1e6 / state.iterations();
    state.counters["step"] = total_ * 1e6 / state.iterations();
  }

 private:
  inline static const std::vector<std::pair<std::string_view, std::string>> kOps = {
      {"embed", "embed"},      {".attn_norm", "norm"},  {".q", "qkv"},
      {".attn", "attention"},  {".attn_out", "o_proj"}, {".attn_residual", "norm"},
      {".mlp_act", "gate_up"}, {".mlp_out", "down"},    {"final_norm", "lm_head"},
      {"logits", "lm_head"}};
  std::map<std::string, double> seconds_;
  double total_ = 0;
  std::optional<Clock::time_point> last_;  // The previous tap of this forward.
};

// Where a decode step's time goes (OpProfile): the step at `batch` as BM_Decode runs it.
void BM_DecodeProfile(benchmark::State& state) {
  Fixture& f = Get(state.range(0), state.range(1));
  if (f.backend == nullptr) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  DecodeBatch decode(state, f.backend.get(), state.range(2));
  OpProfile profile;
  const TensorTap tap = profile.Tap(decode.forward_start());
  for (auto _ : state) profile.EndForward(decode.Step(state, tap));
  profile.Report(state);
}

// Prefill: one prompt of `tokens` (arg 2) per iteration, in a fresh sequence; with `profile`,
// timed op by op (OpProfile).
void Prefill(benchmark::State& state, OpProfile* profile) {
  Fixture& f = Get(state.range(0), state.range(1));
  if (f.backend == nullptr) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const int vocab = f.backend->config().vocab_size;
  KvCache kv(f.backend.get());
  const int64_t tokens = state.range(2);
  std::vector<int32_t> prompt(tokens);
  std::vector<float> logits(vocab);
  OpProfile::Clock::time_point start;
  const TensorTap tap = profile != nullptr ? profile->Tap(start) : TensorTap();
  SeqId id = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = (i * 31 + id * 17) % vocab;
    if (!kv.Create(id).ok() || !kv.Append(id, prompt).ok()) state.SkipWithError("KV setup");
    const KvSequence* seq = *kv.Find(id);
    ForwardRow row{
        .tokens = prompt, .start_pos = 0, .block_table = seq->blocks, .logits = logits.data()};
    start = OpProfile::Clock::now();
    if (!f.backend->Forward({&row, 1}, tap).ok()) state.SkipWithError("forward");
    if (profile != nullptr) {
      profile->EndForward(std::chrono::duration<double>(OpProfile::Clock::now() - start).count());
    }
    (void)kv.Release(id++);
  }
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * tokens,
                                               benchmark::Counter::kIsRate);
}
void BM_Prefill(benchmark::State& state) { Prefill(state, nullptr); }
void BM_PrefillProfile(benchmark::State& state) {
  OpProfile profile;
  Prefill(state, &profile);
  profile.Report(state);
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

// Args: shape (0 tiny, 1 small, 2 llama-3.2-1b-shape, 3 --model), bf16, then batch (decode) or
// prompt tokens (prefill). Shapes 2 and 3 are registered in main, only with --with_1b and
// --model (bf16 means nothing for shape 3).
BENCHMARK(BM_Decode)
    ->ArgsProduct({{kTiny, kSmall}, {0, 1}, {1, 8, 32}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Prefill)
    ->ArgsProduct({{kTiny, kSmall}, {0, 1}, {256}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_KvBranches)->Arg(1024)->Arg(1000)->UseRealTime()->Unit(benchmark::kMicrosecond);

// Decode at batch 1, 8, 32, at batch 1 at a 4,096-token context and of 3 (CoT-decoding's traces)
// and 16 siblings of a 1,024- and a 4,096-token prompt, and prefills of 256 and 2,048 tokens, on
// `shape` (kLlama1b or kModel); batch 1 and 8 and the prefills also op by op.
void RegisterCheckpoint(Shape shape) {
  benchmark::RegisterBenchmark("BM_Decode", BM_Decode)
      ->ArgsProduct({{shape}, {1}, {1, 8, 32}})
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_DecodeProfile", BM_DecodeProfile)
      ->ArgsProduct({{shape}, {1}, {1, 8}})
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_DecodeSiblings", BM_DecodeSiblings)
      ->ArgsProduct({{shape}, {1}, {3, 16}, {1024, 4096}})
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  // One long conversation (its KV, 4,096 tokens, read each step beside the weights).
  benchmark::RegisterBenchmark("BM_DecodeLong", BM_DecodeLong)
      ->ArgsProduct({{shape}, {1}, {1}, {4096}})
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Prefill", BM_Prefill)
      ->ArgsProduct({{shape}, {1}, {256, 2048}})
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_PrefillProfile", BM_PrefillProfile)
      ->ArgsProduct({{shape}, {1}, {256, 2048}})
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace
}  // namespace arbor::worker

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);  // Takes the --benchmark_* flags out of argv.
  // --help shows Google Benchmark's flags; --helpfull also lists --with_1b, --model_1b_dir,
  // --model and the backend's number formats --model is loaded in (arbor-worker's flags).
  if (arbor::base::ParseFlags(
          argc, argv,
          "arbor-bench-worker [--with_1b [--model_1b_dir=DIR]] "
          "[--model=NAME|FILE|DIR [--weights_dtype=D] [--numerics=N]] [--benchmark_...]")
          .size() > 1) {
    std::fprintf(stderr, "arbor-bench-worker takes no positional arguments\n");
    return 1;
  }
  if (absl::GetFlag(FLAGS_with_1b)) arbor::worker::RegisterCheckpoint(arbor::worker::kLlama1b);
  if (!absl::GetFlag(FLAGS_model).empty()) {
    arbor::worker::RegisterCheckpoint(arbor::worker::kModel);
  }
  std::printf("CPU: %s\n", arbor::worker::CpuName().c_str());
  arbor::kernels::ThreadPool pool(arbor::worker::RunThreads());
  arbor::worker::ReadRoofline roofline(pool);
  arbor::worker::SetRunRoofline(&roofline);
  const arbor::worker::ReadBandwidth read = roofline.MeasureAll();
  std::printf(
      "memory read bandwidth: %.2f GB/s (%d threads; best read: %s)\n  each read's best, GB/s: "
      "%s\n",
      read.bytes_per_second / 1e9, arbor::worker::RunThreads(), read.best.c_str(),
      read.all.c_str());
  std::fflush(stdout);
  benchmark::RunSpecifiedBenchmarks();
  // The memory a VM shares with its neighbours moves: the same read after the benchmarks.
  std::printf("memory read bandwidth after the benchmarks: %.2f GB/s\n",
              roofline.MeasureAll().bytes_per_second / 1e9);
  benchmark::Shutdown();
  return 0;
}
