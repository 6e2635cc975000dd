// CUDA backend decode benchmark: tokens/s at batch 1, 16 and 64 with every row at a 512- or
// 4,096-token context, on a random Llama-3.2-1B-shaped model (bf16), every row asking for its
// next-token distribution either as full rows (the logits and last-layer scores copied to the host,
// how the engine asked before reductions) or reduced on the device (the engine's way now: metrics,
// 100 candidates and attention statistics, one pinned copy per step), beside the device-copy
// bandwidth measured in the same run.
// Roofline fraction = (weight bytes + KV bytes read) per step ÷ step time ÷ that bandwidth.
// Each shape runs in up to three variants on one backend, interleaved: `cublas` (every product
// through cuBLASLt with narrowed activations, launches eager: the path before the GEMV and the
// graphs), `gemv` (few rows through the GEMV kernel, eager) and `gemv+graph` (decode steps
// replayed as CUDA graphs). First, the projections alone: the GEMV kernel against cuBLASLt on the
// model's matrices at 1–8 rows, weights rotated through enough copies to defeat the L2 cache.
// Without a CUDA device it prints why and exits 0, so it can run anywhere. --contexts, --batches,
// --steps and --variants narrow a run, e.g. to one shape under a profiler.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "kernels/cuda_context.h"
#include "kernels/cuda_status.h"
#include "kernels/gemv_cuda.h"
#include "model/make_model.h"
#include "tests/worker/random_llama.h"
#include "worker/cuda_backend.h"

ABSL_FLAG(std::vector<std::string>, contexts, std::vector<std::string>({"512", "4096"}),
          "context lengths to time (each at most 4096)");
ABSL_FLAG(std::vector<std::string>, batches, std::vector<std::string>({"1", "16", "64"}),
          "batch sizes to time (each at most 64)");
ABSL_FLAG(int32_t, steps, 32, "timed decode steps per shape, after 4 warm-up steps (1 to 64)");
ABSL_FLAG(std::vector<std::string>, variants,
          std::vector<std::string>({"cublas", "gemv", "gemv+graph"}),
          "step variants to time: cublas, gemv, gemv+graph");
ABSL_FLAG(bool, projections, true, "time the GEMV kernel against cuBLASLt first");

namespace arbor::worker {
namespace {

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

// Device-to-device copy of 1 GiB, median of 20; bytes counted read plus write.
double MeasureCopyBandwidth() {
  const size_t bytes = size_t{1} << 30;
  void *src = nullptr, *dst = nullptr;
  if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess) return 0;
  cudaMemset(src, 0x5a, bytes);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int rep = 0; rep < 23; ++rep) {
    cudaEventRecord(start);
    cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (rep >= 3) ms.push_back(t);  // The first copies warm up.
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * bytes / (ms[ms.size() / 2] * 1e-3);
}

// Median milliseconds of `fn` (launches on `stream`) over 20 timed runs after 3 warm-ups.
template <typename Fn>
double MedianMs(cudaStream_t stream, Fn fn) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int rep = 0; rep < 23; ++rep) {
    cudaEventRecord(start, stream);
    fn(rep);
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (rep >= 3) ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The 1B shape's projections, GEMV against cuBLASLt (activations narrowed first, as the GEMM
// path does) at 1, 2, 4 and 8 rows; weights rotate through copies summing to ≥ 256 MB so every
// run streams them from device memory. Random (not zero) weights and activations.
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
  std::printf("%-8s %6s %6s %4s %10s %10s %8s %8s %7s\n", "matrix", "n", "k", "rows", "cublas us",
              "gemv us", "gemv bw", "of copy", "speedup");
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
    std::vector<float> x_host(kernels::kGemvMaxRows * shape.k);
    for (float& x : x_host) x = normal(rng) * 50;
    float *x = nullptr, *out = nullptr;
    cudaMalloc(reinterpret_cast<void**>(&x), x_host.size() * sizeof(float));
    cudaMalloc(reinterpret_cast<void**>(&out), kernels::kGemvMaxRows * shape.n * sizeof(float));
    cudaMemcpy(x, x_host.data(), x_host.size() * sizeof(float), cudaMemcpyHostToDevice);
    for (int64_t m : {1, 2, 4, 8}) {
      double ms[2];
      for (int gemv = 0; gemv < 2; ++gemv) {
        (*ctx)->set_gemv_max_rows(gemv ? kernels::kGemvMaxRows : 0);
        ms[gemv] = MedianMs((*ctx)->stream(), [&](int rep) {
          const absl::Status s =
              (*ctx)->Matmul({x, weights[rep % copies], kernels::WeightType::kBF16, out, m, shape.n,
                              shape.k, shape.k, shape.n});
          if (!s.ok()) std::printf("error: %s\n", s.ToString().c_str());
        });
      }
      const double gbps = bytes / (ms[1] * 1e-3) / 1e9;
      std::printf("%-8s %6lld %6lld %4lld %10.1f %10.1f %8.0f %7.0f%% %6.2fx\n", shape.name,
                  static_cast<long long>(shape.n), static_cast<long long>(shape.k),
                  static_cast<long long>(m), ms[0] * 1e3, ms[1] * 1e3, gbps,
                  100.0 * gbps * 1e9 / bandwidth, ms[0] / ms[1]);
    }
    for (void* w : weights) cudaFree(w);
    cudaFree(x);
    cudaFree(out);
  }
  return kernels::CudaStatus(cudaDeviceSynchronize(), "projections").ok() ? 0 : 1;
}

int Run() {
  constexpr int32_t kBlock = 16, kMaxBatch = 64, kMaxContext = 4096, kMaxSteps = 64, kWarmup = 4;
  const std::vector<int32_t> contexts =
      ListFlag(absl::GetFlag(FLAGS_contexts), "contexts", kMaxContext);
  const std::vector<int32_t> batches = ListFlag(absl::GetFlag(FLAGS_batches), "batches", kMaxBatch);
  const int32_t steps = absl::GetFlag(FLAGS_steps);
  const std::vector<std::string> variants = absl::GetFlag(FLAGS_variants);
  for (const std::string& v : variants) {
    if (v != "cublas" && v != "gemv" && v != "gemv+graph") {
      std::printf("error: --variants: %s is none of cublas, gemv, gemv+graph\n", v.c_str());
      return 1;
    }
  }
  if (contexts.empty() || batches.empty() || variants.empty() || steps < 1 || steps > kMaxSteps) {
    std::printf(
        "error: need --contexts, --batches, --variants and --steps in range (see --help)\n");
    return 1;
  }
  if (kernels::CudaDeviceCount() == 0) {
    std::printf("skipped: no CUDA device on this machine\n");
    return 0;
  }
  const double bandwidth = MeasureCopyBandwidth();
  std::printf("device copy bandwidth: %.1f GB/s (read + write)\n", bandwidth / 1e9);
  std::mt19937 rng(42);
  const model::ModelConfig config = *model::PresetConfig("llama-3.2-1b-shape");
  if (absl::GetFlag(FLAGS_projections) && TimeProjections(config, bandwidth) != 0) return 1;
  const testing::RandomLlama model(config, /*bf16=*/true, rng);
  const int32_t blocks_per_row = (kMaxContext + kMaxSteps + kWarmup + kBlock) / kBlock + 1;
  auto created = CudaBackend::Create(
      config, model.Lookup(),
      {.device = 0, .kv_blocks = blocks_per_row * (kMaxBatch + 1), .block_size = kBlock});
  if (!created.ok()) {
    std::printf("error: %s\n", created.status().ToString().c_str());
    return 1;
  }
  CudaBackend& backend = **created;
  const CudaBackendOptions defaults;  // The KV dtype a worker gets by default (bf16).
  const int64_t kv_bytes_per_token = int64_t{config.num_layers} * 2 * config.num_kv_heads *
                                     config.head_dim * KvDtypeBytes(defaults.kv_dtype);
  std::printf("weights %.2f GB bf16; KV %lld bytes/token (%s)\n", backend.weight_bytes() / 1e9,
              static_cast<long long>(kv_bytes_per_token),
              defaults.kv_dtype == KvDtype::kBF16 ? "bf16" : "fp32");
  std::printf("%-8s %-6s %-8s %-11s %12s %12s %10s\n", "context", "batch", "rows", "variant",
              "step ms", "tok/s", "roofline");
  std::uniform_int_distribution<int32_t> token(0, config.vocab_size - 1);
  for (int32_t context : contexts) {
    // One prefill of the context (row 64's blocks, in 512-token chunks), then copies of its KV
    // into every row's own blocks, so each row reads its own context from device memory.
    std::vector<int32_t> prefix_table(blocks_per_row);
    for (int32_t i = 0; i < blocks_per_row; ++i) prefix_table[i] = kMaxBatch * blocks_per_row + i;
    for (int32_t start = 0; start < context; start += 512) {
      std::vector<int32_t> chunk(std::min(512, context - start));
      for (int32_t& t : chunk) t = token(rng);
      const ForwardRow row{chunk, start, prefix_table};
      if (absl::Status s = backend.Forward({&row, 1}); !s.ok()) {
        std::printf("error: %s\n", s.ToString().c_str());
        return 1;
      }
    }
    std::vector<BlockCopy> copies;
    for (int32_t b = 0; b < kMaxBatch; ++b) {
      for (int32_t i = 0; i < context / kBlock; ++i) {
        copies.push_back({prefix_table[i], b * blocks_per_row + i, kBlock});
      }
    }
    if (absl::Status s = backend.CopyKvBlocks(copies); !s.ok()) {
      std::printf("error: %s\n", s.ToString().c_str());
      return 1;
    }
    for (int32_t batch : batches) {
      for (bool reduced : {false, true})
        for (const std::string& variant : variants) {
          backend.context().set_gemv_max_rows(variant == "cublas" ? 0 : kernels::kGemvDefaultRows);
          backend.set_cuda_graphs(variant == "gemv+graph");
          std::vector<std::vector<int32_t>> tables(batch), next(batch);
          std::vector<std::vector<float>> logits(batch, std::vector<float>(config.vocab_size));
          std::vector<std::vector<float>> scores(batch);
          std::vector<RowReduction> reductions(batch);
          for (int32_t b = 0; b < batch; ++b) {
            for (int32_t i = 0; i < blocks_per_row; ++i)
              tables[b].push_back(b * blocks_per_row + i);
            next[b] = {token(rng)};
            scores[b].resize(int64_t{config.num_heads} * (context + steps + kWarmup));
          }
          double seconds = 0;
          for (int32_t step = 0; step < kWarmup + steps; ++step) {
            std::vector<ForwardRow> rows;
            for (int32_t b = 0; b < batch; ++b) {
              reductions[b].request.candidates = 100;  // The default policy's.
              if (reduced) {
                rows.push_back({next[b], context + step, tables[b], &reductions[b]});
              } else {
                rows.push_back({next[b], context + step, tables[b], nullptr, logits[b].data(),
                                scores[b].data()});
              }
            }
            const auto start = std::chrono::steady_clock::now();
            if (absl::Status s = backend.Forward(rows); !s.ok()) {
              std::printf("error: %s\n", s.ToString().c_str());
              return 1;
            }
            if (step >= kWarmup) {
              seconds +=
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            }
          }
          const double step_s = seconds / steps;
          const double bytes = static_cast<double>(backend.weight_bytes()) +
                               double{batch} * (context + kWarmup + steps / 2) * kv_bytes_per_token;
          std::printf("%-8d %-6d %-8s %-11s %12.3f %12.1f %9.1f%%\n", context, batch,
                      reduced ? "reduced" : "full", variant.c_str(), step_s * 1e3, batch / step_s,
                      100.0 * bytes / step_s / bandwidth);
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
