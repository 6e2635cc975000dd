// The CPU attention op alone, in arbor-bench-worker: a decode step's (one query per sequence)
// and a prefill's (every token of one sequence, causally), on paged KV pools laid out as the CPU
// backend's.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "base/bf16.h"
#include "base/zero_pages.h"
#include "bench/worker/shuffled_batch.h"
#include "kernels/paged_attention.h"

namespace arbor {
namespace {

// The CPU attention op's inputs: `seqs` sequences of `context` keys each, the last `queries` of
// which attend (causally: query i of a sequence sees the keys up to its own position),
// `kv_heads` × (`group` query heads of `head_dim`), blocks of 16 in a shuffled pool, KV in f32
// or bf16, fresh normal values.
class AttentionCase {
 public:
  AttentionCase(int64_t head_dim, int64_t group, int64_t kv_heads, int64_t seqs, int64_t context,
                int64_t queries, bool bf16) {
    const int64_t block = 16, heads = group * kv_heads, width = kv_heads * head_dim;
    std::mt19937 rng(7);
    batch_ = std::make_unique<bench::ShuffledBatch>(seqs, context, queries, block, rng);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto random = [&](size_t n) {
      std::vector<float> v(n);
      for (float& x : v) x = normal(rng);
      return v;
    };
    // Page-aligned pools, as the backend's (base::ZeroPages).
    const size_t elements = batch_->block_ids.size() * block * width;
    auto pool = [&] {
      absl::StatusOr<base::ZeroPages> pages = base::ZeroPages::Map(elements * (bf16 ? 2 : 4));
      if (!pages.ok()) std::abort();
      for (size_t i = 0; i < elements; ++i) {
        const float x = normal(rng);
        if (bf16) {
          reinterpret_cast<uint16_t*>(pages->data())[i] = base::FloatToBf16(x);
        } else {
          reinterpret_cast<float*>(pages->data())[i] = x;
        }
      }
      return std::move(*pages);
    };
    k_ = pool();
    v_ = pool();
    q_ = random(seqs * queries * heads * head_dim);
    out_.resize(q_.size());
    p_.batch = batch_->View();
    p_.cache = {nullptr, nullptr,  static_cast<int64_t>(batch_->block_ids.size()),
                block,   kv_heads, head_dim};
    if (bf16) {
      p_.cache.k_bf16 = reinterpret_cast<uint16_t*>(k_.data());
      p_.cache.v_bf16 = reinterpret_cast<uint16_t*>(v_.data());
    } else {
      p_.cache.k = reinterpret_cast<float*>(k_.data());
      p_.cache.v = reinterpret_cast<float*>(v_.data());
    }
    p_.q = q_.data();
    p_.out = out_.data();
    p_.q_stride = p_.out_stride = heads * head_dim;
    p_.num_heads = heads;
    p_.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  }
  const kernels::PagedAttentionParams& params() const { return p_; }
  const float* out() const { return out_.data(); }

 private:
  std::unique_ptr<bench::ShuffledBatch> batch_;  // Where p_.batch points.
  base::ZeroPages k_, v_;
  std::vector<float> q_, out_;
  kernels::PagedAttentionParams p_;
};

// The CPU decode attention op alone, one thread: 8 sequences of `context` keys, one query each.
// Args: head_dim, group, kv heads, context, KV dtype (0 f32, 1 bf16). Reports keys attended per
// second (per query head) and the KV bytes read per second.
void BM_DecodeAttention(benchmark::State& state) {
  const int64_t head_dim = state.range(0), group = state.range(1), kv_heads = state.range(2);
  const int64_t context = state.range(3), seqs = 8;
  const bool bf16 = state.range(4) == 1;
  const AttentionCase c(head_dim, group, kv_heads, seqs, context, 1, bf16);
  for (auto _ : state) {
    kernels::PagedAttentionRef(c.params(), nullptr);
    benchmark::DoNotOptimize(c.out());
  }
  state.counters["keys_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * seqs * group * kv_heads * context),
      benchmark::Counter::kIsRate);
  state.counters["kv_bytes_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * seqs * context * 2 * kv_heads *
                                             head_dim * (bf16 ? 2 : 4)),
                         benchmark::Counter::kIsRate);
}

// The CPU attention op of a prefill alone, one thread: one sequence of `tokens` tokens, each
// attending to itself and the tokens before it. Args: head_dim, group, kv heads, tokens, KV
// dtype. Reports query-key pairs per second (per query head).
void BM_PrefillAttention(benchmark::State& state) {
  const int64_t head_dim = state.range(0), group = state.range(1), kv_heads = state.range(2);
  const int64_t tokens = state.range(3);
  const AttentionCase c(head_dim, group, kv_heads, 1, tokens, tokens, state.range(4) == 1);
  for (auto _ : state) {
    kernels::PagedAttentionRef(c.params(), nullptr);
    benchmark::DoNotOptimize(c.out());
  }
  state.counters["pairs_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * group * kv_heads * tokens * (tokens + 1) / 2),
      benchmark::Counter::kIsRate);
}

// tiny (16 × 2 groups of 2 kv heads) at 160 keys; Llama-3.2-1B (64 × 4 of 8) at 512, 4,096 and
// 16,384 (the KV pools outgrow the caches there); f32 and bf16 KV.
BENCHMARK(BM_DecodeAttention)
    ->ArgsProduct({{16}, {2}, {2}, {160}, {0, 1}})
    ->ArgsProduct({{64}, {4}, {8}, {512, 4096, 16384}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);
// SmolLM2 (64 × 3 of 3) and Llama-3.2-1B (64 × 4 of 8) at 256 and 2,048 tokens, f32 and bf16 KV.
BENCHMARK(BM_PrefillAttention)
    ->ArgsProduct({{64}, {3}, {3}, {256, 2048}, {0, 1}})
    ->ArgsProduct({{64}, {4}, {8}, {256, 2048}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace arbor
