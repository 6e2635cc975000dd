// CUDA backend decode benchmark: tokens/s at batch 1, 16 and 64 with every row at a 512- or
// 4,096-token context, on a random Llama-3.2-1B-shaped model (bf16), every row asking for its
// next-token distribution either as full rows (the logits and last-layer scores copied to the host,
// how the engine asked before reductions) or reduced on the device (the engine's way now: metrics,
// 100 candidates and attention statistics, one pinned copy per step), beside the device-copy
// bandwidth measured in the same run.
// Roofline fraction = (weight bytes + KV bytes read) per step ÷ step time ÷ that bandwidth.
// Each shape runs in several variants on one backend, interleaved: `cublas` (every product
// through cuBLASLt with narrowed activations, launches eager: the path before the GEMV and the
// graphs), `gemv` (few rows through the GEMV kernel, eager), `gemv+graph` (decode steps
// replayed as CUDA graphs), `cascade` (gemv+graph with cascade attention) — the fast numerics —
// and `invariant` (the worker's default --numerics=invariant: the batch-invariant GEMM at every
// row count, fixed attention splits, graphs). With --siblings the rows are sibling branches whose
// block tables share the context's blocks (the roofline then counts the shared context once).
// First, the projections alone on the model's matrices at 1–512 rows: cuBLASLt, the GEMV (up to
// 8 rows) and the batch-invariant GEMM, weights rotated through enough copies to defeat the L2
// cache; and a 512-token prefill in each numerics. Without a CUDA device it prints why and exits
// 0, so it can run anywhere. --contexts, --batches, --steps and --variants narrow a run, e.g. to
// one shape under a profiler; --weights=q4_k (or another GGUF block type) runs the model's
// matrices as random blocks of that type kept on the device, and --model=FILE.gguf a checkpoint.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "base/status_macros.h"
#include "bench/worker/cuda_timing.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/gemv_cuda.h"
#include "model/checkpoint.h"
#include "model/dtype.h"
#include "model/make_model.h"
#include "tests/worker/backend/random_llama.h"
#include "worker/backend/cuda_backend.h"

ABSL_FLAG(std::vector<std::string>, contexts, std::vector<std::string>({"512", "4096"}),
          "context lengths to time (each at most 4096)");
ABSL_FLAG(std::vector<std::string>, batches, std::vector<std::string>({"1", "16", "64"}),
          "batch sizes to time (each at most 64)");
ABSL_FLAG(int32_t, steps, 32, "timed decode steps per shape, after 4 warm-up steps (1 to 64)");
ABSL_FLAG(std::vector<std::string>, variants,
          std::vector<std::string>({"cublas", "gemv", "gemv+graph", "invariant"}),
          "step variants to time: cublas, gemv, gemv+graph, cascade (gemv+graph with cascade "
          "attention), invariant (batch-invariant numerics with graphs, the default worker's)");
ABSL_FLAG(bool, projections, true,
          "time the projections (cuBLASLt, GEMV, batch-invariant GEMM) and a prefill first");
ABSL_FLAG(std::string, weights, "bf16",
          "the model's matrices: bf16, or random GGUF blocks of one type kept on the device "
          "(q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k)");
ABSL_FLAG(std::string, model, "",
          "a checkpoint to time instead of the random model: a GGUF file (its blocks kept on the "
          "device) or a Hugging Face directory");
ABSL_FLAG(bool, siblings, false,
          "rows are sibling branches sharing the context's KV blocks (what cascade attention "
          "serves) instead of each holding its own copy");

namespace arbor::worker {
namespace {

using bench::MeasureCopyBandwidth;
using bench::MedianMs;

// The integers of a list flag, each in [1, max]; an empty result means a bad value (printed).
std::vector<int32_t> ListFlag(const std::vector<std::string>& values, const char* name,
                              int32_t max) {
  std::vector<int32_t> out;
  for (const std::string& v : values) {
    int32_t x = 0;
    if (!absl::SimpleAtoi(v, &x) || x < 1 || x > max) {
      std::printf("error: --%s: %s is not an integer in [1, %d]\n", name, v.c_str(), max);
      return {};
    }
    out.push_back(x);
  }
  return out;
}

// The 1B shape's projections at 1 to 512 rows: cuBLASLt (activations narrowed first, as the GEMM
// path does), the GEMV up to kGemvMaxRows rows, and the batch-invariant GEMM (narrowed too), its
// bandwidth and its time over the fastest other's; weights rotate through copies summing to
// ≥ 256 MB so every run streams them from device memory. Random (not zero) weights and
// activations.
int TimeProjections(const model::ModelConfig& c, double bandwidth) {
  auto ctx = kernels::CudaContext::Create(0);
  if (!ctx.ok()) {
    std::printf("error: %s\n", ctx.status().ToString().c_str());
    return 1;
  }
  const int64_t hd = c.head_dim, hidden = c.hidden_size, ffn = c.intermediate_size;
  const int64_t qkv = (c.num_heads + 2 * c.num_kv_heads) * hd;
  const struct {
    const char* name;
    int64_t n, k;
  } shapes[] = {{"qkv", qkv, hidden},
                {"o", hidden, c.num_heads * hd},
                {"gate_up", 2 * ffn, hidden},
                {"down", hidden, ffn},
                {"lm_head", c.vocab_size, hidden}};
  constexpr int64_t kRows[] = {1, 2, 4, 8, 32, 512};
  constexpr int64_t kMostRows = 512;
  std::printf("%-8s %6s %6s %4s %10s %10s %10s %8s %8s %9s\n", "matrix", "n", "k", "rows",
              "cublas us", "gemv us", "invar. us", "invar bw", "of copy", "inv/fast");
  std::mt19937 rng(7);
  for (const auto& shape : shapes) {
    const size_t bytes = static_cast<size_t>(shape.n * shape.k) * 2;
    const int copies = static_cast<int>(std::max<size_t>(1, (size_t{256} << 20) / bytes + 1));
    std::vector<void*> weights(copies);
    std::vector<uint16_t> host(shape.n * shape.k);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    for (uint16_t& w : host) w = static_cast<uint16_t>(std::bit_cast<uint32_t>(normal(rng)) >> 16);
    for (void*& w : weights) {
      cudaMalloc(&w, bytes);
      cudaMemcpy(w, host.data(), bytes, cudaMemcpyHostToDevice);
    }
    std::vector<float> x_host(kMostRows * shape.k);
    for (float& x : x_host) x = normal(rng) * 50;
    float *x = nullptr, *out = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&x), x_host.size() * sizeof(float));
    cudaMalloc(reinterpret_cast<void**>(&out), kMostRows * shape.n * sizeof(float));
    cudaMemcpy(x, x_host.data(), x_host.size() * sizeof(float), cudaMemcpyHostToDevice);
    if (absl::Status s = (*ctx)->ReserveStaging(kMostRows * shape.k); !s.ok()) {
      std::printf("error: %s\n", s.ToString().c_str());
      return 1;
    }
    for (int64_t m : kRows) {
      // cuBLASLt, the GEMV (where it serves), the batch-invariant GEMM.
      double ms[3] = {0, 0, 0};
      for (int path = 0; path < 3; ++path) {
        if (path == 1 && m > kernels::kGemvMaxRows) continue;
        (*ctx)->set_gemv_max_rows(path == 1 ? kernels::kGemvMaxRows : 0);
        ms[path] = MedianMs((*ctx)->stream(), [&](int rep) {
          const absl::Status s = (*ctx)->Matmul({.x = x,
                                                 .w = weights[rep % copies],
                                                 .w_type = kernels::WeightType::kBF16,
                                                 .out = out,
                                                 .m = m,
                                                 .n = shape.n,
                                                 .k = shape.k,
                                                 .x_stride = shape.k,
                                                 .out_stride = shape.n,
                                                 .batch_invariant = path == 2});
          if (!s.ok()) std::printf("error: %s\n", s.ToString().c_str());
        });
      }
      const double fastest = ms[1] > 0 ? std::min(ms[0], ms[1]) : ms[0];
      const double gbps = bytes / (ms[2] * 1e-3) / 1e9;
      std::printf("%-8s %6lld %6lld %4lld %10.1f %10.1f %10.1f %8.0f %7.0f%% %8.2fx\n", shape.name,
                  static_cast<long long>(shape.n), static_cast<long long>(shape.k),
                  static_cast<long long>(m), ms[0] * 1e3, ms[1] * 1e3, ms[2] * 1e3, gbps,
                  100.0 * gbps * 1e9 / bandwidth, ms[2] / fastest);
    }
    for (void* w : weights) cudaFree(w);
    cudaFree(x);
    cudaFree(out);
  }
  return kernels::CudaStatus(cudaDeviceSynchronize(), "projections").ok() ? 0 : 1;
}

constexpr int32_t kBlock = 16, kMaxBatch = 64, kMaxContext = 4096, kMaxSteps = 64, kWarmup = 4;
constexpr int32_t kBlocksPerRow = (kMaxContext + kMaxSteps + kWarmup + kBlock) / kBlock + 1;

// The context's blocks: after all the rows' own.
std::vector<int32_t> PrefixTable() {
  std::vector<int32_t> table(kBlocksPerRow);
  for (int32_t i = 0; i < kBlocksPerRow; ++i) table[i] = kMaxBatch * kBlocksPerRow + i;
  return table;
}

// One prefill of `context` random tokens into PrefixTable()'s blocks, in 512-token chunks; then,
// unless the rows share them (`siblings`), copies into every row's own blocks so that each row
// reads its own context from device memory.
absl::Status PrefillContext(CudaBackend& backend, int32_t context, bool siblings,
                            std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> token(0, backend.config().vocab_size - 1);
  const std::vector<int32_t> prefix = PrefixTable();
  for (int32_t start = 0; start < context; start += 512) {
    std::vector<int32_t> chunk(std::min(512, context - start));
    for (int32_t& t : chunk) t = token(rng);
    const ForwardRow row{chunk, start, prefix};
    RETURN_IF_ERROR(backend.Forward({&row, 1}));
  }
  if (siblings) return absl::OkStatus();
  std::vector<BlockCopy> copies;
  for (int32_t b = 0; b < kMaxBatch; ++b) {
    for (int32_t i = 0; i < context / kBlock; ++i) {
      copies.push_back({prefix[i], b * kBlocksPerRow + i, kBlock});
    }
  }
  return backend.CopyKvBlocks(copies);
}

// Row b's table: its own blocks, or (siblings) the context's whole blocks, then its own.
std::vector<int32_t> RowTable(int32_t b, int32_t context, bool siblings) {
  const std::vector<int32_t> prefix = PrefixTable();
  std::vector<int32_t> table;
  for (int32_t i = 0; i < kBlocksPerRow; ++i) {
    table.push_back(siblings && i < context / kBlock ? prefix[i] : b * kBlocksPerRow + i);
  }
  return table;
}

// Mean seconds of `steps` decode steps of `batch` rows after kWarmup more.
absl::StatusOr<double> TimeDecode(CudaBackend& backend, int32_t context, int32_t batch,
                                  bool reduced, bool siblings, int32_t steps, std::mt19937& rng) {
  const model::ModelConfig& config = backend.config();
  std::uniform_int_distribution<int32_t> token(0, config.vocab_size - 1);
  std::vector<std::vector<int32_t>> tables(batch), next(batch);
  std::vector<std::vector<float>> logits(batch, std::vector<float>(config.vocab_size));
  std::vector<std::vector<float>> scores(batch);
  std::vector<RowReduction> reductions(batch);
  for (int32_t b = 0; b < batch; ++b) {
    tables[b] = RowTable(b, context, siblings);
    next[b] = {token(rng)};
    scores[b].resize(int64_t{config.num_heads} * (context + steps + kWarmup));
    reductions[b].request.candidates = 100;  // The default policy's.
  }
  double seconds = 0;
  for (int32_t step = 0; step < kWarmup + steps; ++step) {
    std::vector<ForwardRow> rows;
    for (int32_t b = 0; b < batch; ++b) {
      if (reduced) {
        rows.push_back({next[b], context + step, tables[b], &reductions[b]});
      } else {
        rows.push_back(
            {next[b], context + step, tables[b], nullptr, logits[b].data(), scores[b].data()});
      }
    }
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(backend.Forward(rows));
    if (step >= kWarmup) {
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  return seconds / steps;
}

// The flags, checked; false (after printing why) when one is out of range.
struct Settings {
  std::vector<int32_t> contexts, batches;
  std::vector<std::string> variants;
  int32_t steps = 0;
  bool siblings = false;
  std::optional<model::DType> blocks;  // --weights: a block type, or bf16 (nullopt).
  std::string model;                   // --model, or empty.
};

// The block type a --weights value names (lower case), or nullopt.
std::optional<model::DType> BlockTypeFlag(const std::string& name) {
  for (model::DType t :
       {model::DType::kQ8_0, model::DType::kQ4_0, model::DType::kQ4_1, model::DType::kQ5_0,
        model::DType::kQ5_1, model::DType::kQ4_K, model::DType::kQ5_K, model::DType::kQ6_K}) {
    if (absl::AsciiStrToUpper(name) == model::DTypeName(t)) return t;
  }
  return std::nullopt;
}

bool ReadSettings(Settings& s) {
  s.contexts = ListFlag(absl::GetFlag(FLAGS_contexts), "contexts", kMaxContext);
  s.batches = ListFlag(absl::GetFlag(FLAGS_batches), "batches", kMaxBatch);
  s.steps = absl::GetFlag(FLAGS_steps);
  s.variants = absl::GetFlag(FLAGS_variants);
  s.siblings = absl::GetFlag(FLAGS_siblings);
  s.model = absl::GetFlag(FLAGS_model);
  const std::string weights = absl::GetFlag(FLAGS_weights);
  s.blocks = BlockTypeFlag(weights);
  if (!s.blocks && weights != "bf16") {
    std::printf("error: --weights: %s is not bf16 or a GGUF block type\n", weights.c_str());
    return false;
  }
  for (const std::string& v : s.variants) {
    if (v != "cublas" && v != "gemv" && v != "gemv+graph" && v != "cascade" && v != "invariant") {
      std::printf("error: --variants: %s is none of cublas, gemv, gemv+graph, cascade, invariant\n",
                  v.c_str());
      return false;
    }
  }
  if (s.contexts.empty() || s.batches.empty() || s.variants.empty() || s.steps < 1 ||
      s.steps > kMaxSteps) {
    std::printf(
        "error: need --contexts, --batches, --variants and --steps in range (see --help)\n");
    return false;
  }
  return true;
}

absl::Status SetVariant(CudaBackend& backend, const std::string& variant) {
  backend.context().set_gemv_max_rows(variant == "cublas" ? 0 : kernels::kGemvDefaultRows);
  backend.set_cuda_graphs(variant == "gemv+graph" || variant == "cascade" ||
                          variant == "invariant");
  backend.set_cascade(variant == "cascade");
  return backend.set_batch_invariant(variant == "invariant");
}

// Median seconds of a 512-token prefill chunk (positions 0–511, the context's blocks), in the
// backend's current numerics; 5 runs after one warm-up.
absl::StatusOr<double> TimePrefill(CudaBackend& backend, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> token(0, backend.config().vocab_size - 1);
  std::vector<int32_t> chunk(512);
  for (int32_t& t : chunk) t = token(rng);
  const std::vector<int32_t> prefix = PrefixTable();
  const ForwardRow row{chunk, 0, prefix};
  std::vector<double> seconds;
  for (int rep = 0; rep < 6; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(backend.Forward({&row, 1}));
    if (rep > 0) {
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

// A 512-token prefill in each numerics: the fast one (cuBLASLt) and the batch-invariant GEMM.
absl::Status TimePrefills(CudaBackend& backend, std::mt19937& rng) {
  double fast = 0;
  for (const char* variant : {"cublas", "invariant"}) {
    RETURN_IF_ERROR(SetVariant(backend, variant));
    ASSIGN_OR_RETURN(const double s, TimePrefill(backend, rng));
    if (fast == 0) fast = s;
    std::printf("prefill 512 tokens, %-9s %8.3f ms %10.0f tok/s %6.2fx the fast path's time\n",
                variant, s * 1e3, 512 / s, s / fast);
  }
  return absl::OkStatus();
}

// The backend of --model, or of a random Llama-3.2-1B-shaped model in --weights (the random
// weights are needed only while loading).
absl::StatusOr<std::unique_ptr<CudaBackend>> MakeBackend(const Settings& settings,
                                                         std::mt19937& rng) {
  const CudaBackendOptions options = {
      .device = 0, .kv_blocks = kBlocksPerRow * (kMaxBatch + 1), .block_size = kBlock};
  if (!settings.model.empty()) {
    ASSIGN_OR_RETURN(std::unique_ptr<model::Checkpoint> checkpoint,
                     model::Checkpoint::Open(settings.model));
    return CudaBackend::Create(std::shared_ptr<const model::Checkpoint>(std::move(checkpoint)),
                               options);
  }
  const model::ModelConfig config = *model::PresetConfig("llama-3.2-1b-shape");
  if (settings.blocks) {
    const testing::RandomBlockLlama model(config, std::vector<model::DType>(8, *settings.blocks),
                                          rng);
    return CudaBackend::Create(config, model.Lookup(), options);
  }
  const testing::RandomLlama model(config, /*bf16=*/true, rng);
  return CudaBackend::Create(config, model.Lookup(), options);
}

int Run() {
  Settings settings;
  if (!ReadSettings(settings)) return 1;
  if (kernels::CudaDeviceCount() == 0) {
    std::printf("skipped: no CUDA device on this machine\n");
    return 0;
  }
  const double bandwidth = MeasureCopyBandwidth();
  std::printf("device copy bandwidth: %.1f GB/s (read + write)\n", bandwidth / 1e9);
  std::mt19937 rng(42);
  auto created = MakeBackend(settings, rng);
  if (!created.ok()) {
    std::printf("error: %s\n", created.status().ToString().c_str());
    return 1;
  }
  const model::ModelConfig& config = (*created)->config();
  if (absl::GetFlag(FLAGS_projections) && TimeProjections(config, bandwidth) != 0) return 1;
  CudaBackend& backend = **created;
  if (absl::GetFlag(FLAGS_projections)) {
    if (absl::Status s = TimePrefills(backend, rng); !s.ok()) {
      std::printf("error: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  const CudaBackendOptions defaults;  // The KV dtype a worker gets by default (bf16).
  const int64_t kv_bytes_per_token = int64_t{config.num_layers} * 2 * config.num_kv_heads *
                                     config.head_dim * KvDtypeBytes(defaults.kv_dtype);
  std::printf(
      "weights %.2f GB %s; KV %lld bytes/token (%s)%s\n", backend.weight_bytes() / 1e9,
      settings.model.empty() ? absl::GetFlag(FLAGS_weights).c_str() : settings.model.c_str(),
      static_cast<long long>(kv_bytes_per_token),
      defaults.kv_dtype == KvDtype::kBF16 ? "bf16" : "fp32",
      settings.siblings ? "; rows are siblings sharing the context's blocks" : "");
  std::printf("%-8s %-6s %-8s %-11s %12s %12s %10s\n", "context", "batch", "rows", "variant",
              "step ms", "tok/s", "roofline");
  for (int32_t context : settings.contexts) {
    if (absl::Status s = PrefillContext(backend, context, settings.siblings, rng); !s.ok()) {
      std::printf("error: %s\n", s.ToString().c_str());
      return 1;
    }
    for (int32_t batch : settings.batches) {
      for (bool reduced : {false, true}) {
        for (const std::string& variant : settings.variants) {
          if (absl::Status s = SetVariant(backend, variant); !s.ok()) {
            std::printf("error: %s\n", s.ToString().c_str());
            return 1;
          }
          const absl::StatusOr<double> step_s =
              TimeDecode(backend, context, batch, reduced, settings.siblings, settings.steps, rng);
          if (!step_s.ok()) {
            std::printf("error: %s\n", step_s.status().ToString().c_str());
            return 1;
          }
          // KV the step must read: each row's own context, or the shared one once.
          const double kv_tokens =
              settings.siblings
                  ? context + static_cast<double>(batch) * (kWarmup + settings.steps / 2)
                  : static_cast<double>(batch) * (context + kWarmup + settings.steps / 2);
          const double bytes =
              static_cast<double>(backend.weight_bytes()) + kv_tokens * kv_bytes_per_token;
          std::printf("%-8d %-6d %-8s %-11s %12.3f %12.1f %9.1f%%\n", context, batch,
                      reduced ? "reduced" : "full", variant.c_str(), *step_s * 1e3, batch / *step_s,
                      100.0 * bytes / *step_s / bandwidth);
        }
      }
    }
  }
  std::printf("graphs: %lld captured, %lld replays\n",
              static_cast<long long>(backend.graphs().captures()),
              static_cast<long long>(backend.graphs().replays()));
  return 0;
}

}  // namespace
}  // namespace arbor::worker

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "CUDA decode benchmark on a random Llama-3.2-1B-shaped model: full vs reduced rows.");
  absl::ParseCommandLine(argc, argv);
  return arbor::worker::Run();
}
