// Paged attention alone, one layer of decode rows on the Llama-3.2-1B shape (32 query heads,
// 8 kv heads, head_dim 64, bf16 KV pool in 16-token blocks), beside the device-copy bandwidth
// measured in the same run:
//   - independent rows, each over its own context (up to the 64 × 4,096 long-context shape):
//     effective bandwidth = KV bytes the step must read ÷ time, and its fraction of the copy;
//   - sibling rows sharing a prefix (what a branch makes) plus a few keys of their own, without
//     and with cascade attention (groups planned by worker/backend/cascade_plan.h, as the backend
//     plans them), the bandwidth counting the shared prefix once.
// Each case runs the block-wide kernel, the warp-tiled one and (siblings) cascade; "speedup" is
// the block-wide kernel's time over the fastest path's, and every output is compared with the
// block-wide kernel's, so a fast wrong kernel cannot pass unnoticed.
// Without a CUDA device it prints why and exits 0.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "base/bf16.h"
#include "bench/worker/cuda_timing.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/paged_attention_cuda.h"
#include "worker/backend/cascade_plan.h"
#include "worker/backend/forward_rows.h"

namespace arbor::worker {
namespace {

constexpr int64_t kHeads = 32, kKvHeads = 8, kHeadDim = 64, kBlock = 16;
constexpr int64_t kOwnKeys = 8;  // Keys each sibling holds after the shared prefix.
constexpr int64_t kKvBytesPerToken = 2 * kKvHeads * kHeadDim * 2;  // K and V, bf16.

// A device copy of `host`, freed by the caller.
template <typename T>
T* Upload(const std::vector<T>& host) {
  T* device = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&device), std::max<size_t>(1, host.size()) * sizeof(T));
  cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return device;
}

// One decode step's rows: row r reads `shared` blocks common to all rows (siblings) and then
// blocks of its own, `len` keys in all.
StepBatch Rows(int64_t rows, int64_t len, int64_t shared_blocks) {
  StepBatch b;
  const int64_t blocks = (len + kBlock - 1) / kBlock;
  int32_t next = static_cast<int32_t>(shared_blocks);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < blocks; ++i) {
      b.block_ids.push_back(i < shared_blocks ? static_cast<int32_t>(i) : next++);
    }
    b.block_start.push_back(static_cast<int32_t>(b.block_ids.size()));
    b.kv_len.push_back(static_cast<int32_t>(len));
    b.q_start.push_back(static_cast<int32_t>(r + 1));
    b.tokens.push_back(0);
    b.positions.push_back(static_cast<int32_t>(len - 1));
  }
  b.max_kv_len = static_cast<int32_t>(len);
  return b;
}

struct Case {
  int64_t rows, len, shared_blocks;
};

class Bench {
 public:
  explicit Bench(int multiprocessors) : multiprocessors_(multiprocessors) {
    // Enough blocks for 64 rows of 4,096 keys of their own; random bf16 keys and values.
    pool_blocks_ = 64 * (4096 / kBlock + 1) + 1;
    const size_t elements = static_cast<size_t>(pool_blocks_ * kBlock * kKvHeads * kHeadDim);
    std::vector<uint16_t> host(elements);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<uint16_t> sample(1 << 16);
    for (uint16_t& x : sample) x = base::FloatToBf16(normal(rng));
    for (size_t i = 0; i < elements; ++i) host[i] = sample[(i * 2654435761u) >> 16 & 0xffff];
    k_ = Upload(host);
    std::reverse(host.begin(), host.end());
    v_ = Upload(host);
    std::vector<float> q(64 * kHeads * kHeadDim);
    for (float& x : q) x = normal(rng);
    q_ = Upload(q);
    cudaMalloc(reinterpret_cast<void**>(&out_), q.size() * sizeof(float));
    cudaStreamCreate(&stream_);
  }

  struct Times {
    double block_ms = 0, warp_ms = 0, cascade_ms = 0;  // 0: not run for this case.
    double diff = 0;  // Largest |other − block| over the outputs ÷ the largest |block|.
  };

  // Milliseconds per launch for the case with the block-wide kernel, the warp-tiled one (where
  // it serves) and, for siblings, cascade attention (over the default kernel).
  Times Time(const Case& c) {
    const StepBatch b = Rows(c.rows, c.len, c.shared_blocks);
    int32_t* q_start = Upload(b.q_start);
    int32_t* kv_len = Upload(b.kv_len);
    int32_t* block_start = Upload(b.block_start);
    int32_t* block_ids = Upload(b.block_ids);
    const kernels::PagedBatch batch{c.rows, q_start, kv_len, block_start, block_ids};
    const kernels::PagedKvLayer cache{nullptr,  nullptr,  pool_blocks_, kBlock,
                                      kKvHeads, kHeadDim, k_,           v_};
    const kernels::PagedAttentionParams p{batch,
                                          cache,
                                          q_,
                                          out_,
                                          kHeads * kHeadDim,
                                          kHeads * kHeadDim,
                                          kHeads,
                                          1.0f / std::sqrt(static_cast<float>(kHeadDim))};
    kernels::PagedAttentionLaunch warp;
    warp.num_tokens = c.rows;
    warp.num_splits = kernels::PagedAttentionSplits(c.rows, kKvHeads, c.len, multiprocessors_);
    kernels::PagedAttentionLaunch block = warp;
    block.block_kernel = true;
    const CascadePlan cp =
        c.shared_blocks > 0
            ? PlanCascade(b, kBlock,
                          static_cast<int32_t>(kernels::CascadeMaxMembers(kHeads / kKvHeads)))
            : CascadePlan{};
    std::vector<int32_t*> cascade_arrays;
    kernels::PagedAttentionLaunch cascade = warp;
    if (cp.num_groups() > 0) {
      for (const auto* v : {&cp.group_start, &cp.tokens, &cp.seq, &cp.prefix_len, &cp.key_begin}) {
        cascade_arrays.push_back(Upload(*v));
      }
      cascade.cascade = {
          cp.num_groups(),
          cascade_arrays[0],
          cascade_arrays[1],
          cascade_arrays[2],
          cascade_arrays[3],
          cascade_arrays[4],
          kernels::CascadeSplits(cp.num_groups(), kKvHeads, cp.max_prefix_len, multiprocessors_),
          cp.max_members};
    }
    float* workspace = nullptr;
    const int64_t floats = kernels::PagedAttentionWorkspaceFloats(
        c.rows, kHeads, kHeadDim,
        std::max(kernels::TotalSplits(warp), kernels::TotalSplits(cascade)));
    cudaMalloc(reinterpret_cast<void**>(&workspace), std::max<int64_t>(1, floats) * sizeof(float));
    block.workspace = warp.workspace = cascade.workspace = workspace;
    const size_t out_floats = static_cast<size_t>(c.rows * kHeads * kHeadDim);
    std::vector<float> reference(out_floats), output(out_floats);
    Times t;
    auto run = [&](const kernels::PagedAttentionLaunch& launch, double& ms) {
      ms = bench::MedianMs(stream_, [&](int) {
        const cudaError_t e = kernels::LaunchPagedAttention(p, launch, stream_);
        if (e != cudaSuccess) std::printf("error: %s\n", cudaGetErrorString(e));
      });
      cudaMemcpy(output.data(), out_, out_floats * sizeof(float), cudaMemcpyDeviceToHost);
      if (&launch == &block) {
        reference = output;
        return;
      }
      double scale = 0, diff = 0;
      for (size_t i = 0; i < out_floats; ++i) {
        scale = std::max(scale, std::abs(double{reference[i]}));
        diff = std::max(diff, std::abs(double{output[i]} - reference[i]));
      }
      t.diff = std::max(t.diff, diff / std::max(scale, 1e-30));
    };
    run(block, t.block_ms);
    if (kernels::WarpAttentionServes(kHeadDim, kHeads / kKvHeads)) run(warp, t.warp_ms);
    if (cp.num_groups() > 0) run(cascade, t.cascade_ms);
    for (int32_t* a : cascade_arrays) cudaFree(a);
    for (int32_t* a : {q_start, kv_len, block_start, block_ids}) cudaFree(a);
    cudaFree(workspace);
    return t;
  }

 private:
  int multiprocessors_;
  int64_t pool_blocks_ = 0;
  uint16_t* k_ = nullptr;
  uint16_t* v_ = nullptr;
  float* q_ = nullptr;
  float* out_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

int Run() {
  if (kernels::CudaDeviceCount() == 0) {
    std::printf("skipped: no CUDA device on this machine\n");
    return 0;
  }
  int multiprocessors = 0;
  cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, 0);
  const double bandwidth = bench::MeasureCopyBandwidth();
  std::printf("device copy bandwidth: %.1f GB/s (read + write); %d SMs\n", bandwidth / 1e9,
              multiprocessors);
  Bench bench(multiprocessors);
  std::printf("%-9s %5s %6s %7s %9s %9s %10s %8s %8s %8s %9s\n", "rows", "count", "keys", "shared",
              "block us", "warp us", "cascade us", "speedup", "GB/s", "of copy", "max diff");
  const Case cases[] = {{1, 512, 0},
                        {1, 4096, 0},
                        {16, 4096, 0},
                        {64, 512, 0},
                        {64, 4096, 0},
                        {16, 2048 + kOwnKeys, 128},
                        {64, 2048 + kOwnKeys, 128},
                        {64, 512 + kOwnKeys, 32}};
  for (const Case& c : cases) {
    const Bench::Times t = bench.Time(c);
    const bool siblings = c.shared_blocks > 0;
    // Keys the step must read: the shared prefix once (what cascade reads), or every row's own.
    const double keys = siblings
                            ? c.shared_blocks * kBlock + c.rows * (c.len - c.shared_blocks * kBlock)
                            : static_cast<double>(c.rows * c.len);
    const double best_ms = siblings ? t.cascade_ms : t.warp_ms > 0 ? t.warp_ms : t.block_ms;
    const double gbps = keys * kKvBytesPerToken / (best_ms * 1e-3) / 1e9;
    std::printf("%-9s %5lld %6lld %7lld %9.1f %9.1f %10.1f %7.2fx %8.0f %7.1f%% %9.1e\n",
                siblings ? "siblings" : "own", static_cast<long long>(c.rows),
                static_cast<long long>(c.len), static_cast<long long>(c.shared_blocks * kBlock),
                t.block_ms * 1e3, t.warp_ms * 1e3, t.cascade_ms * 1e3, t.block_ms / best_ms, gbps,
                100.0 * gbps * 1e9 / bandwidth, t.diff);
  }
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}

}  // namespace
}  // namespace arbor::worker

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Paged attention alone on the Llama-3.2-1B shape: long contexts against the copy "
      "bandwidth, and sibling rows with and without cascade attention.");
  absl::ParseCommandLine(argc, argv);
  return arbor::worker::Run();
}
