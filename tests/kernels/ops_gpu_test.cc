// Every CUDA kernel against its CPU twin (the _ref.cc op, or entropix's metrics) on fresh random
// inputs over awkward sizes, outputs poisoned (NaN / −1) before each run so an unwritten element
// fails. Skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "base/bf16.h"
#include "entropix/attention_metrics.h"
#include "entropix/logit_metrics.h"
#include "kernels/attention_stats_cuda.h"
#include "kernels/cuda_context.h"
#include "kernels/cuda_status.h"
#include "kernels/embedding_cuda.h"
#include "kernels/gemv_cuda.h"
#include "kernels/logit_stats_cuda.h"
#include "kernels/paged_attention_cuda.h"
#include "kernels/paged_kv_append_cuda.h"
#include "kernels/rms_norm_cuda.h"
#include "kernels/rope_cuda.h"

namespace arbor::kernels {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine"

static_assert(sizeof(AttentionHeadPartial) == sizeof(entropix::AttentionHeadState));
static_assert(offsetof(AttentionHeadPartial, abs_sum) ==
              offsetof(entropix::AttentionHeadState, abs_sum));
static_assert(offsetof(AttentionHeadPartial, count) ==
              offsetof(entropix::AttentionHeadState, count));

std::mt19937 Rng() {
  const uint32_t seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  return std::mt19937(seed);
}

std::vector<float> Normal(std::mt19937& rng, size_t n, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// A device copy of a host vector; Poison fills every byte with 0xff (NaN for floats, −1 ints).
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    EXPECT_TRUE(
        CudaStatus(cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max<size_t>(1, n) * sizeof(T)),
                   "malloc")
            .ok());
  }
  // The copy and Poison's memset go on the legacy stream, which the kernels' non-blocking
  // streams do not wait for: each waits for the device, or the kernel could read the array
  // before the copy lands or have its output poisoned after it ran.
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice);
    EXPECT_TRUE(CudaStatus(cudaDeviceSynchronize(), "upload").ok());
  }
  ~DeviceArray() { cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return ptr_; }
  void Poison() {
    cudaMemset(ptr_, 0xff, n_ * sizeof(T));
    EXPECT_TRUE(CudaStatus(cudaDeviceSynchronize(), "poison").ok());
  }
  std::vector<T> Download() const {
    std::vector<T> host(n_);
    EXPECT_TRUE(CudaStatus(cudaDeviceSynchronize(), "sync").ok());
    cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost);
    return host;
  }

 private:
  T* ptr_ = nullptr;
  size_t n_;
};

void ExpectOk(cudaError_t e) { ASSERT_TRUE(CudaStatus(e, "launch").ok()) << cudaGetErrorString(e); }

// ‖got − want‖ ≤ tol·‖want‖ + floor·√n, and no NaN anywhere (a poisoned element left
// unwritten). `floor` is for outputs that can cancel to near zero, such as dot products: their
// rounding scales with the terms' magnitudes, not with the result's.
void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, double tol,
                 double floor = 0) {
  ASSERT_EQ(got.size(), want.size());
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << "element " << i << " unwritten or NaN";
    err += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
    norm += double{want[i]} * want[i];
  }
  EXPECT_LE(std::sqrt(err), tol * std::sqrt(norm) + floor * std::sqrt(got.size()) + 1e-30)
      << "relative error too large";
}

TEST(OpsGpu, EmbeddingBf16AndF32) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (int64_t tokens : {1, 7, 64}) {
    const int64_t vocab = 1000, dim = 130;
    std::vector<float> table = Normal(rng, vocab * dim);
    std::vector<uint16_t> table_bf16(table.size());
    for (size_t i = 0; i < table.size(); ++i) table_bf16[i] = base::FloatToBf16(table[i]);
    std::vector<int32_t> ids(tokens);
    for (int32_t& t : ids) t = std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
    DeviceArray<int32_t> d_ids(ids);
    DeviceArray<float> d_table(table);
    DeviceArray<uint16_t> d_table_bf16(table_bf16);
    for (WeightType type : {WeightType::kF32, WeightType::kBF16}) {
      const void* host_table =
          type == WeightType::kF32 ? static_cast<const void*>(table.data()) : table_bf16.data();
      const void* dev_table =
          type == WeightType::kF32 ? static_cast<const void*>(d_table.get()) : d_table_bf16.get();
      std::vector<float> want(tokens * dim);
      EmbeddingRef({ids.data(), host_table, type, want.data(), tokens, vocab, dim, dim});
      DeviceArray<float> out(tokens * dim);
      out.Poison();
      ExpectOk(LaunchEmbedding({d_ids.get(), dev_table, type, out.get(), tokens, vocab, dim, dim},
                               nullptr));
      EXPECT_EQ(out.Download(), want);  // A copy (and exact widening): bit-identical.
    }
  }
}

TEST(OpsGpu, RmsNormWithAndWithoutResidual) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (const auto& [rows, dim] : {std::pair<int64_t, int64_t>{1, 1}, {7, 33}, {64, 2048}}) {
    for (bool fused : {false, true}) {
      std::vector<float> x = Normal(rng, rows * dim, 3.0f), weight = Normal(rng, dim);
      std::vector<float> residual = Normal(rng, rows * dim), want(rows * dim);
      std::vector<float> want_residual = residual;
      RmsNormRef({x.data(), fused ? want_residual.data() : nullptr, weight.data(), want.data(),
                  rows, dim, dim, dim, dim, 1e-5f});
      DeviceArray<float> d_x(x), d_w(weight), d_res(residual), out(rows * dim);
      out.Poison();
      ExpectOk(LaunchRmsNorm({d_x.get(), fused ? d_res.get() : nullptr, d_w.get(), out.get(), rows,
                              dim, dim, dim, dim, 1e-5f},
                             nullptr));
      ExpectClose(out.Download(), want, 1e-6);
      if (fused) {  // Same fp32 adds: exact.
        EXPECT_EQ(d_res.Download(), want_residual);
      }
    }
  }
}

TEST(OpsGpu, RopeLlama3Scaling) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  const RopeScalingParams scaling{RopeScalingParams::Type::kLlama3, 32.0, 1.0, 4.0, 8192.0, {}};
  for (int64_t head_dim : {16, 64, 128}) {
    const std::vector<float> inv_freq = RopeInvFreq(500000.0, static_cast<int>(head_dim), scaling);
    for (int64_t tokens : {1, 17, 1000}) {
      const int64_t heads = 3, stride = heads * head_dim + 5, half = head_dim / 2;
      std::vector<int32_t> positions(tokens);
      for (int32_t& p : positions) p = std::uniform_int_distribution<int32_t>(0, 131071)(rng);
      std::vector<float> cos(tokens * half), sin(tokens * half);
      RopeCosSinRef({positions.data(), inv_freq.data(), cos.data(), sin.data(), tokens, head_dim});
      std::vector<float> x = Normal(rng, tokens * stride), want = x;
      RopeRef({want.data(), cos.data(), sin.data(), tokens, heads, head_dim, stride});

      DeviceArray<int32_t> d_pos(positions);
      DeviceArray<float> d_freq(inv_freq), d_cos(tokens * half), d_sin(tokens * half), d_x(x);
      d_cos.Poison();
      d_sin.Poison();
      ExpectOk(LaunchRopeCosSin(
          {d_pos.get(), d_freq.get(), d_cos.get(), d_sin.get(), tokens, head_dim}, nullptr));
      // cos/sin of a double angle rounded to float: at most one ulp apart from the host's libm.
      ExpectClose(d_cos.Download(), cos, 1e-7);
      ExpectClose(d_sin.Download(), sin, 1e-7);
      ExpectOk(LaunchRope({d_x.get(), d_cos.get(), d_sin.get(), tokens, heads, head_dim, stride},
                          nullptr));
      ExpectClose(d_x.Download(), want, 1e-6);
    }
  }
}

TEST(OpsGpu, MatmulAndLogitsThroughCublasLt) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  auto ctx = CudaContext::Create(0);
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  (*ctx)->set_gemv_max_rows(0);  // Every product through cuBLASLt (the GEMV has its own test).
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 8},
                                {7, 33, 64},
                                {64, 2048, 512},
                                {3, 512, 2048}}) {
    std::vector<float> x = Normal(rng, m * k), w = Normal(rng, n * k);
    std::vector<uint16_t> w_bf16(w.size());
    for (size_t i = 0; i < w.size(); ++i) w_bf16[i] = base::FloatToBf16(w[i]);
    // The GEMM reads bf16 activations: the reference gets the same rounded x, so the only
    // difference left is the order of fp32 accumulation.
    std::vector<float> x_rounded(x.size());
    for (size_t i = 0; i < x.size(); ++i) x_rounded[i] = base::Bf16ToFloat(base::FloatToBf16(x[i]));
    std::vector<float> want(m * n);
    MatmulRef({x_rounded.data(), w_bf16.data(), WeightType::kBF16, want.data(), m, n, k, k, n},
              nullptr);
    DeviceArray<float> d_x(x), out(m * n);
    DeviceArray<uint16_t> d_w(w_bf16);
    out.Poison();
    ASSERT_TRUE(
        (*ctx)->Matmul({d_x.get(), d_w.get(), WeightType::kBF16, out.get(), m, n, k, k, n}).ok());
    ExpectClose(out.Download(), want, 1e-5);

    // Logits: every other row, in reverse order.
    std::vector<int32_t> rows;
    for (int64_t r = m - 1; r >= 0; r -= 2) rows.push_back(static_cast<int32_t>(r));
    const int64_t nr = static_cast<int64_t>(rows.size());
    std::vector<float> want_logits(nr * n);
    LogitsRef({x_rounded.data(), rows.data(), w_bf16.data(), WeightType::kBF16, want_logits.data(),
               nr, k, n, k, n},
              nullptr);
    DeviceArray<int32_t> d_rows(rows);
    DeviceArray<float> logits(nr * n);
    logits.Poison();
    ASSERT_TRUE((*ctx)
                    ->Logits({d_x.get(), d_rows.get(), d_w.get(), WeightType::kBF16, logits.get(),
                              nr, k, n, k, n})
                    .ok());
    ExpectClose(logits.Download(), want_logits, 1e-5);
  }
}

// A random paged batch: sequence s has kv_len[s] keys, the last n[s] of them new this step;
// block tables are a random permutation of the pool so neighbouring positions sit apart.
struct PagedCase {
  int64_t block_size, num_kv_heads, group, head_dim;
  std::vector<int32_t> kv_len, n_new;
};

struct HostBatch {
  std::vector<int32_t> q_start{0}, block_start{0}, block_ids;
  int64_t num_blocks = 0;
};

HostBatch MakeBatch(const PagedCase& c, std::mt19937& rng) {
  HostBatch b;
  for (size_t s = 0; s < c.kv_len.size(); ++s) {
    b.q_start.push_back(b.q_start.back() + c.n_new[s]);
    b.num_blocks += (c.kv_len[s] + c.block_size - 1) / c.block_size;
    b.block_start.push_back(static_cast<int32_t>(b.num_blocks));
  }
  b.block_ids.resize(b.num_blocks);
  std::iota(b.block_ids.begin(), b.block_ids.end(), 0);
  std::shuffle(b.block_ids.begin(), b.block_ids.end(), rng);
  return b;
}

// Per-sequence score rows on the device, shaped like `host`, and the table of their pointers
// the attention kernels write through.
struct DeviceScores {
  explicit DeviceScores(const std::vector<std::vector<float>>& host) {
    std::vector<float*> pointers;
    for (const std::vector<float>& row : host) {
      rows.push_back(std::make_unique<DeviceArray<float>>(row.size()));
      pointers.push_back(rows.back()->get());
    }
    table = std::make_unique<DeviceArray<float*>>(pointers);
  }
  std::vector<std::unique_ptr<DeviceArray<float>>> rows;
  std::unique_ptr<DeviceArray<float*>> table;
};

// bf16 pools hold `floats` rounded; Widen reads them back (both exact for the comparison).
std::vector<uint16_t> ToBf16(const std::vector<float>& floats) {
  std::vector<uint16_t> out(floats.size());
  for (size_t i = 0; i < floats.size(); ++i) out[i] = base::FloatToBf16(floats[i]);
  return out;
}
std::vector<float> Widen(const std::vector<uint16_t>& halves) {
  std::vector<float> out(halves.size());
  for (size_t i = 0; i < halves.size(); ++i) out[i] = base::Bf16ToFloat(halves[i]);
  return out;
}

// Device KV append + attention against the CPU ops on the same pools (fp32, or bf16 when `bf16`:
// then both round the appended K/V the same way and attend over the same widened values).
void CheckPagedAttention(const PagedCase& c, std::mt19937& rng, int multiprocessors,
                         bool bf16 = false) {
  SCOPED_TRACE(testing::Message() << "bf16 " << bf16 << " block " << c.block_size << " kv_heads "
                                  << c.num_kv_heads << " group " << c.group << " head_dim "
                                  << c.head_dim << " seqs " << c.kv_len.size() << " first kv_len "
                                  << c.kv_len[0] << " first n " << c.n_new[0]);
  const HostBatch b = MakeBatch(c, rng);
  const int64_t seqs = static_cast<int64_t>(c.kv_len.size());
  const int64_t tokens = b.q_start.back();
  const int64_t heads = c.num_kv_heads * c.group, width = c.num_kv_heads * c.head_dim;
  const int64_t pool = b.num_blocks * c.block_size * width;
  std::vector<float> k_cache = Normal(rng, pool), v_cache = Normal(rng, pool);
  std::vector<float> q = Normal(rng, tokens * heads * c.head_dim, 2.0f);
  std::vector<float> new_k = Normal(rng, tokens * width), new_v = Normal(rng, tokens * width);
  std::vector<std::vector<float>> scores(seqs);
  std::vector<float*> score_ptrs(seqs);
  for (int64_t s = 0; s < seqs; ++s) {
    scores[s].resize(heads * c.kv_len[s]);
    score_ptrs[s] = scores[s].data();
  }
  const PagedBatch host_batch{seqs, b.q_start.data(), c.kv_len.data(), b.block_start.data(),
                              b.block_ids.data()};
  std::vector<float> want(tokens * heads * c.head_dim);
  PagedKvLayer host_cache{k_cache.data(), v_cache.data(), b.num_blocks,
                          c.block_size,   c.num_kv_heads, c.head_dim};
  std::vector<uint16_t> k16 = ToBf16(k_cache), v16 = ToBf16(v_cache);
  if (bf16) {
    host_cache.k = host_cache.v = nullptr;
    host_cache.k_bf16 = k16.data();
    host_cache.v_bf16 = v16.data();
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  DeviceArray<float> d_k(k_cache), d_v(v_cache), d_q(q), d_new_k(new_k), d_new_v(new_v);
  DeviceArray<int32_t> d_q_start(b.q_start), d_kv_len(c.kv_len), d_block_start(b.block_start),
      d_block_ids(b.block_ids);
  const PagedBatch dev_batch{seqs, d_q_start.get(), d_kv_len.get(), d_block_start.get(),
                             d_block_ids.get()};
  DeviceArray<uint16_t> d_k16(k16), d_v16(v16);
  PagedKvLayer dev_cache{d_k.get(),    d_v.get(),      b.num_blocks,
                         c.block_size, c.num_kv_heads, c.head_dim};
  if (bf16) {
    dev_cache.k = dev_cache.v = nullptr;
    dev_cache.k_bf16 = d_k16.get();
    dev_cache.v_bf16 = d_v16.get();
  }
  PagedKvAppendRef({host_batch, host_cache, new_k.data(), new_v.data(), width, width});
  PagedAttentionRef({host_batch, host_cache, q.data(), want.data(), heads * c.head_dim,
                     heads * c.head_dim, heads, scale, score_ptrs.data()},
                    nullptr);
  ExpectOk(LaunchPagedKvAppend({dev_batch, dev_cache, d_new_k.get(), d_new_v.get(), width, width},
                               tokens, nullptr));
  if (bf16) {  // Rounded to nearest even on both sides: the same bits.
    ExpectClose(Widen(d_k16.Download()), Widen(k16), 0.0);
    ExpectClose(Widen(d_v16.Download()), Widen(v16), 0.0);
  } else {
    ExpectClose(d_k.Download(), k_cache, 0.0);
    ExpectClose(d_v.Download(), v_cache, 0.0);
  }

  DeviceScores device_scores(scores);
  std::vector<std::unique_ptr<DeviceArray<float>>>& d_scores = device_scores.rows;
  DeviceArray<float*>& d_score_table = *device_scores.table;
  const int64_t max_len = *std::max_element(c.kv_len.begin(), c.kv_len.end());
  for (int64_t splits :
       {int64_t{1}, PagedAttentionSplits(tokens, c.num_kv_heads, max_len, multiprocessors),
        int64_t{7}}) {
    SCOPED_TRACE(testing::Message() << "splits " << splits);
    DeviceArray<float> out(want.size());
    DeviceArray<float> workspace(
        std::max<int64_t>(1, PagedAttentionWorkspaceFloats(tokens, heads, c.head_dim, splits)));
    out.Poison();
    for (auto& d : d_scores) d->Poison();
    ExpectOk(LaunchPagedAttention({dev_batch, dev_cache, d_q.get(), out.get(), heads * c.head_dim,
                                   heads * c.head_dim, heads, scale, d_score_table.get()},
                                  {tokens, splits, workspace.get(), {}}, nullptr));
    ExpectClose(out.Download(), want, 1e-5);
    // A score is q·k·scale with ‖q‖ ≈ 2√d and ‖k‖ ≈ √d: a sequence with few keys can have all
    // its scores near zero, where fp32 summation order alone moves them by ~1e-7 absolute.
    const double score_floor = 1e-6 * 2.0 * c.head_dim * scale;
    for (int64_t s = 0; s < seqs; ++s) {
      ExpectClose(d_scores[s]->Download(), scores[s], 1e-6, score_floor);
    }
  }
}

// Σ_k x[i, k]·w[n, k] in float64 over the exact bf16 weights and fp32 activations.
std::vector<double> MatmulF64(const std::vector<float>& x, int64_t x_stride,
                              const std::vector<int32_t>& rows, const std::vector<uint16_t>& w,
                              int64_t n, int64_t k) {
  std::vector<double> out(rows.size() * n);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t c = 0; c < k; ++c) {
        sum += double{x[rows[i] * x_stride + c]} * base::Bf16ToFloat(w[j * k + c]);
      }
      out[i * n + j] = sum;
    }
  }
  return out;
}

// The GEMV against float64 on awkward sizes, with gathered rows and strided outputs; then the
// batch-invariance it promises: each row's result is the same bits alone and among others.
TEST(OpsGpu, GemvMatchesFloat64AndIsBatchInvariant) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{1, 8},
                             {3, 16},
                             {17, 1000},
                             {64, 4096},
                             {2051, 2048},
                             {1000, 8192}}) {
    const int64_t x_rows = 11, x_stride = k + 4, out_stride = n + 3;
    std::vector<float> x = Normal(rng, x_rows * x_stride);
    std::vector<uint16_t> w = ToBf16(Normal(rng, n * k));
    DeviceArray<float> d_x(x);
    DeviceArray<uint16_t> d_w(w);
    std::vector<std::vector<float>> alone(x_rows);  // Row r's outputs computed with m = 1.
    for (int64_t m = 1; m <= kGemvMaxRows; ++m) {
      SCOPED_TRACE(testing::Message() << "n " << n << " k " << k << " m " << m);
      std::vector<int32_t> rows(m);
      std::uniform_int_distribution<int32_t> pick(0, x_rows - 1);
      for (int32_t& r : rows) r = m == 1 ? 0 : pick(rng);
      if (m == 1) rows[0] = 5;
      DeviceArray<int32_t> d_rows(rows);
      DeviceArray<float> out(m * out_stride);
      out.Poison();
      const GemvParams p{d_x.get(), d_rows.get(), d_w.get(), out.get(), m, n,
                         k,         x_stride,     out_stride};
      ASSERT_TRUE(GemvServes(p));
      ExpectOk(LaunchGemvBf16(p, nullptr));
      const std::vector<float> got = out.Download();
      const std::vector<double> want = MatmulF64(x, x_stride, rows, w, n, k);
      std::vector<float> got_rows(m * n), want_rows(m * n);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          got_rows[i * n + j] = got[i * out_stride + j];
          want_rows[i * n + j] = static_cast<float>(want[i * n + j]);
        }
      }
      // fp32 sums of k products of unit-normal terms: rounding ~1e-7·√k relative to the terms.
      ExpectClose(got_rows, want_rows, 1e-5, 1e-6 * std::sqrt(static_cast<double>(k)));
      for (int64_t i = 0; i < m; ++i) {
        std::vector<float> row(got_rows.begin() + i * n, got_rows.begin() + (i + 1) * n);
        if (alone[rows[i]].empty()) {
          alone[rows[i]] = row;
        } else {
          EXPECT_EQ(std::memcmp(row.data(), alone[rows[i]].data(), n * sizeof(float)), 0)
              << "x row " << rows[i] << " at position " << i << " of " << m;
        }
      }
    }
  }
  // What the GEMV does not take is refused, for the caller's fallback.
  GemvParams odd{reinterpret_cast<const float*>(16),
                 nullptr,
                 reinterpret_cast<uint16_t*>(16),
                 reinterpret_cast<float*>(16),
                 1,
                 4,
                 12,
                 12,
                 4};
  EXPECT_FALSE(GemvServes(odd));  // k not a multiple of 8
  odd.k = odd.x_stride = 16;
  odd.m = kGemvMaxRows + 1;
  EXPECT_FALSE(GemvServes(odd));
}

// The fused neighbours: x rows RMS-normalised by the GEMV (never stored) and the product added
// into the output (the residual), against float64 RMSNorm then matmul then add.
TEST(OpsGpu, GemvFusesRmsNormAndResidualAdd) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  constexpr float kEps = 1e-5f;
  for (const auto& [m, n, k] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 5, 8}, {3, 129, 2048}, {8, 2048, 8192}}) {
    SCOPED_TRACE(testing::Message() << "m " << m << " n " << n << " k " << k);
    std::vector<float> x = Normal(rng, m * k, 3.0f), g = Normal(rng, k),
                       residual = Normal(rng, m * n);
    std::vector<uint16_t> w = ToBf16(Normal(rng, n * k));
    std::vector<float> want(m * n);
    for (int64_t i = 0; i < m; ++i) {
      double squares = 0;
      for (int64_t c = 0; c < k; ++c) squares += double{x[i * k + c]} * x[i * k + c];
      const double inv_rms = 1.0 / std::sqrt(squares / k + kEps);
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t c = 0; c < k; ++c) {
          sum += double{x[i * k + c]} * inv_rms * g[c] * base::Bf16ToFloat(w[j * k + c]);
        }
        want[i * n + j] = static_cast<float>(residual[i * n + j] + sum);
      }
    }
    DeviceArray<float> d_x(x), d_g(g), out(residual);
    DeviceArray<uint16_t> d_w(w);
    GemvParams p{d_x.get(), nullptr, d_w.get(), out.get(), m, n, k, k, n};
    p.norm_weight = d_g.get();
    p.norm_eps = kEps;
    p.accumulate = true;
    ExpectOk(LaunchGemvBf16(p, nullptr));
    ExpectClose(out.Download(), want, 1e-5, 1e-6 * std::sqrt(static_cast<double>(k)));
  }
}

TEST(OpsGpu, PagedKvAppendAndAttention) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  int multiprocessors = 0;
  cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, 0);
  const std::vector<int32_t> lengths = {1, 17, 1000, 4096};
  auto pick = [&] { return lengths[std::uniform_int_distribution<size_t>(0, 3)(rng)]; };
  for (int64_t block_size : {1, 3, 16}) {
    for (int64_t group : {1, 4, 8}) {  // 8: the kernel's wider accumulators.
      for (int64_t head_dim : {16, 64, 128}) {
        // Decode rows at batch 1, 7 and 64 over mixed context lengths.
        for (int batch : {1, 7, 64}) {
          PagedCase c{block_size, 2, group, head_dim, {}, {}};
          for (int s = 0; s < batch; ++s) {
            c.kv_len.push_back(batch == 1 ? 4096 : pick());
            c.n_new.push_back(1);
          }
          CheckPagedAttention(c, rng, multiprocessors);
        }
        // Prefill (whole sequence new) and extend chunks beside a decode row, in both dtypes.
        for (bool bf16 : {false, true}) {
          CheckPagedAttention({block_size, 2, group, head_dim, {17, 1000, 1000}, {17, 1000, 17}},
                              rng, multiprocessors, bf16);
          CheckPagedAttention({block_size, 2, group, head_dim, {1, 4096}, {1, 1}}, rng,
                              multiprocessors, bf16);
        }
      }
    }
  }
}

// Cascade attention on decode rows of which some share prefix blocks (sibling branches): groups
// of siblings over one prefix, a lone row, and a group of one reading no prefix, against the CPU
// reference over the same pools; outputs and the last layer's scores, fp32 and bf16 pools.
void CheckCascade(int64_t block_size, int64_t group, int64_t head_dim, bool bf16, std::mt19937& rng,
                  int multiprocessors) {
  SCOPED_TRACE(testing::Message() << "cascade: block " << block_size << " group " << group
                                  << " head_dim " << head_dim << " bf16 " << bf16);
  constexpr int64_t kKvHeads = 2;
  const int64_t heads = kKvHeads * group, width = kKvHeads * head_dim;
  // Sibling groups: (members, prefix blocks); each member adds 1–40 own keys after the prefix.
  const std::vector<std::pair<int, int64_t>> sharing = {{5, 7}, {3, 70}, {1, 2}, {1, 0}};
  std::vector<int32_t> kv_len, block_start = {0}, block_ids, q_start = {0};
  std::vector<int32_t> group_start = {0}, tokens, rep, prefix_len, key_begin;
  int32_t next_block = 0;
  std::uniform_int_distribution<int64_t> own(1, 40);
  for (const auto& [members, prefix_blocks] : sharing) {
    std::vector<int32_t> prefix(prefix_blocks);
    for (int32_t& b : prefix) b = next_block++;
    rep.push_back(static_cast<int32_t>(kv_len.size()));
    prefix_len.push_back(static_cast<int32_t>(members > 1 ? prefix_blocks * block_size : 0));
    for (int m = 0; m < members; ++m) {
      const int64_t len = prefix_blocks * block_size + own(rng);
      tokens.push_back(static_cast<int32_t>(kv_len.size()));
      key_begin.push_back(prefix_len.back());
      kv_len.push_back(static_cast<int32_t>(len));
      q_start.push_back(q_start.back() + 1);
      block_ids.insert(block_ids.end(), prefix.begin(), prefix.end());
      for (int64_t b = prefix_blocks; b < (len + block_size - 1) / block_size; ++b) {
        block_ids.push_back(next_block++);
      }
      block_start.push_back(static_cast<int32_t>(block_ids.size()));
    }
    group_start.push_back(static_cast<int32_t>(tokens.size()));
  }
  const int64_t seqs = static_cast<int64_t>(kv_len.size()), pool = next_block * block_size * width;
  std::vector<float> k_cache = Normal(rng, pool), v_cache = Normal(rng, pool);
  std::vector<uint16_t> k16 = ToBf16(k_cache), v16 = ToBf16(v_cache);
  if (bf16) k_cache = Widen(k16), v_cache = Widen(v16);  // Both sides read the same values.
  const std::vector<float> q = Normal(rng, seqs * heads * head_dim, 2.0f);
  std::vector<std::vector<float>> scores(seqs);
  std::vector<float*> score_ptrs(seqs);
  for (int64_t s = 0; s < seqs; ++s) {
    scores[s].resize(heads * kv_len[s]);
    score_ptrs[s] = scores[s].data();
  }
  const PagedBatch host_batch{seqs, q_start.data(), kv_len.data(), block_start.data(),
                              block_ids.data()};
  const PagedKvLayer host_cache{k_cache.data(), v_cache.data(), next_block,
                                block_size,     kKvHeads,       head_dim};
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  std::vector<float> want(seqs * heads * head_dim);
  PagedAttentionRef({host_batch, host_cache, q.data(), want.data(), heads * head_dim,
                     heads * head_dim, heads, scale, score_ptrs.data()},
                    nullptr);

  DeviceArray<float> d_k(k_cache), d_v(v_cache), d_q(q), out(want.size());
  DeviceArray<uint16_t> d_k16(k16), d_v16(v16);
  DeviceArray<int32_t> d_q_start(q_start), d_kv_len(kv_len), d_block_start(block_start),
      d_block_ids(block_ids), d_group_start(group_start), d_tokens(tokens), d_rep(rep),
      d_prefix(prefix_len), d_key_begin(key_begin);
  PagedKvLayer dev_cache{d_k.get(), d_v.get(), next_block, block_size, kKvHeads, head_dim};
  if (bf16) {
    dev_cache.k = dev_cache.v = nullptr;
    dev_cache.k_bf16 = d_k16.get();
    dev_cache.v_bf16 = d_v16.get();
  }
  DeviceScores device_scores(scores);
  std::vector<std::unique_ptr<DeviceArray<float>>>& d_scores = device_scores.rows;
  DeviceArray<float*>& d_score_table = *device_scores.table;
  const PagedBatch dev_batch{seqs, d_q_start.get(), d_kv_len.get(), d_block_start.get(),
                             d_block_ids.get()};
  const int64_t max_prefix = *std::max_element(prefix_len.begin(), prefix_len.end());
  CascadeGroups cascade{static_cast<int64_t>(rep.size()),
                        d_group_start.get(),
                        d_tokens.get(),
                        d_rep.get(),
                        d_prefix.get(),
                        d_key_begin.get(),
                        1,
                        5};
  for (int64_t prefix_splits :
       {int64_t{1}, int64_t{3},
        CascadeSplits(cascade.num_groups, kKvHeads, max_prefix, multiprocessors)}) {
    for (int64_t splits : {int64_t{1}, int64_t{2}}) {
      SCOPED_TRACE(testing::Message() << "splits " << splits << " prefix splits " << prefix_splits);
      cascade.num_splits = prefix_splits;
      const PagedAttentionLaunch launch{seqs, splits, nullptr, cascade};
      DeviceArray<float> workspace(
          PagedAttentionWorkspaceFloats(seqs, heads, head_dim, TotalSplits(launch)));
      PagedAttentionLaunch with_workspace = launch;
      with_workspace.workspace = workspace.get();
      out.Poison();
      for (auto& d : d_scores) d->Poison();
      ExpectOk(LaunchPagedAttention({dev_batch, dev_cache, d_q.get(), out.get(), heads * head_dim,
                                     heads * head_dim, heads, scale, d_score_table.get()},
                                    with_workspace, nullptr));
      ExpectClose(out.Download(), want, 1e-5);
      const double score_floor = 1e-6 * 2.0 * head_dim * scale;
      for (int64_t s = 0; s < seqs; ++s) {
        ExpectClose(d_scores[s]->Download(), scores[s], 1e-6, score_floor);
      }
    }
  }
}

TEST(OpsGpu, CascadeAttentionOnSiblingsMatchesTheReference) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  int multiprocessors = 0;
  cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, 0);
  for (int64_t block_size : {3, 16}) {
    for (int64_t group : {1, 4, 8}) {
      for (int64_t head_dim : {64, 128}) {
        for (bool bf16 : {false, true}) {
          CheckCascade(block_size, group, head_dim, bf16, rng, multiprocessors);
        }
      }
    }
  }
}

TEST(OpsGpu, LogitStatsMatchEntropix) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (const auto& [rows, vocab, top_k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1},
                                           {7, 4097, 0},
                                           {7, 1000, 256},
                                           {64, 128256, 64},
                                           {1, 128256, 256},
                                           {3, 128256, 1024}}) {
    SCOPED_TRACE(testing::Message() << rows << " rows of " << vocab << ", top " << top_k);
    std::vector<float> logits = Normal(rng, rows * vocab, 4.0f);
    // Ties and masked tokens: the canonical order must break ties by lower id.
    for (int64_t r = 0; r < rows; ++r) {
      logits[r * vocab + vocab / 2] = logits[r * vocab];
      if (vocab > 2) logits[r * vocab + 1] = -INFINITY;
    }
    const int64_t chunks = LogitStatsChunks(vocab);
    DeviceArray<float> d_logits(logits);
    DeviceArray<entropix::SoftmaxMoments> moments(rows * chunks);
    DeviceArray<int32_t> bad(rows * chunks), top_ids(std::max<int64_t>(1, rows * top_k)),
        cand_ids(std::max<int64_t>(1, rows * chunks * top_k));
    DeviceArray<float> top_values(std::max<int64_t>(1, rows * top_k)),
        cand_values(std::max<int64_t>(1, rows * chunks * top_k));
    // A probed token per row (none in the last row), ranked on the device.
    std::vector<int32_t> probes(rows);
    for (int64_t r = 0; r < rows; ++r)
      probes[r] = r + 1 == rows && rows > 1 ? -1 : (r * 7919) % vocab;
    DeviceArray<int32_t> d_probes(probes);
    DeviceArray<LogitRecord> records(rows);
    records.Poison();
    moments.Poison();
    bad.Poison();
    top_ids.Poison();
    top_values.Poison();
    ExpectOk(LaunchLogitStats(
        {d_logits.get(), rows, vocab, vocab, top_k, moments.get(), bad.get(), top_values.get(),
         top_ids.get(), cand_values.get(), cand_ids.get(), d_probes.get(), records.get()},
        nullptr));
    const auto got_records = records.Download();
    const auto got_moments = moments.Download();
    const auto got_bad = bad.Download();
    const auto got_values = top_values.Download();
    const auto got_ids = top_ids.Download();
    for (int64_t r = 0; r < rows; ++r) {
      auto want = entropix::ComputeLogitMetrics(logits.data() + r * vocab, static_cast<int>(vocab),
                                                static_cast<int>(top_k));
      ASSERT_TRUE(want.ok()) << want.status();
      entropix::SoftmaxMoments merged;
      for (int64_t c = 0; c < chunks; ++c) {
        EXPECT_EQ(got_bad[r * chunks + c], -1);
        merged.Merge(got_moments[r * chunks + c]);
      }
      auto got = entropix::FinishLogitMetrics(merged);
      ASSERT_TRUE(got.ok()) << got.status();
      // The device's own merge of the same chunks, in the same order, by the same code.
      const LogitRecord& record = got_records[r];
      // (Device and host exp(double) may differ in the last place.)
      const double scale = 1e-12 * (merged.sum + std::abs(merged.sum_x) + merged.sum_xx);
      EXPECT_EQ(record.moments.max, merged.max);
      EXPECT_NEAR(record.moments.sum, merged.sum, scale);
      EXPECT_NEAR(record.moments.sum_x, merged.sum_x, scale);
      EXPECT_NEAR(record.moments.sum_xx, merged.sum_xx, scale);
      EXPECT_EQ(record.first_non_finite, -1);
      const int32_t probe = probes[r];
      if (probe < 0) {
        EXPECT_EQ(record.probe_rank, 0);
      } else {
        const float* row = logits.data() + r * vocab;
        EXPECT_EQ(record.probe_logit, row[probe]);
        EXPECT_EQ(record.probe_rank,
                  1 + std::count_if(row, row + vocab, [&](float x) { return x > row[probe]; }));
      }
      EXPECT_NEAR(got->entropy, want->entropy, 1e-4 * (1 + want->entropy));
      EXPECT_NEAR(got->varentropy, want->varentropy, 1e-4 * (1 + want->varentropy));
      EXPECT_NEAR(got->logsumexp, want->logsumexp, 1e-5 * (1 + std::abs(want->logsumexp)));
      EXPECT_EQ(got->max_logit, want->max_logit);
      for (int64_t i = 0; i < top_k; ++i) {
        ASSERT_EQ(got_ids[r * top_k + i], want->top_k[i].id) << "row " << r << " rank " << i;
        EXPECT_NEAR(got_values[r * top_k + i] - got->logsumexp, want->top_k[i].logprob, 1e-4);
      }
    }
  }
}

TEST(OpsGpu, LogitStatsReportNonFinite) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  const int64_t vocab = 5000;
  std::vector<float> logits = Normal(rng, vocab);
  logits[4321] = NAN;
  logits[4400] = INFINITY;
  const int64_t chunks = LogitStatsChunks(vocab);
  DeviceArray<float> d_logits(logits);
  DeviceArray<entropix::SoftmaxMoments> moments(chunks);
  DeviceArray<int32_t> bad(chunks);
  bad.Poison();
  DeviceArray<LogitRecord> records(1);
  ExpectOk(LaunchLogitStats({d_logits.get(), 1, vocab, vocab, 0, moments.get(), bad.get(), nullptr,
                             nullptr, nullptr, nullptr, nullptr, records.get()},
                            nullptr));
  EXPECT_EQ(bad.Download(), (std::vector<int32_t>{-1, -1, 4321}));
  EXPECT_EQ(records.Download()[0].first_non_finite, 4321);
}

// The device arrays of one LaunchAttentionStats call and the params pointing at them.
struct AttentionStatsCall {
  AttentionStatsCall(int64_t rows, int64_t heads, int64_t max_chunks)
      : partials(rows * heads * max_chunks),
        merged(rows * heads),
        chunk_bad(rows * heads * max_chunks),
        bad(rows),
        log_norm(rows * heads),
        sums(rows * max_chunks) {
    merged.Poison();
    bad.Poison();
    sums.Poison();
    params.rows = rows;
    params.num_heads = heads;
    params.max_chunks = max_chunks;
    params.partials = partials.get();
    params.chunk_non_finite = chunk_bad.get();
    params.log_normalizers = log_norm.get();
    params.heads = merged.get();
    params.non_finite = bad.get();
    params.agreement_sums = sums.get();
  }
  DeviceArray<AttentionHeadPartial> partials, merged;
  DeviceArray<int32_t> chunk_bad, bad;
  DeviceArray<double> log_norm, sums;
  AttentionStatsParams params;
};

// Every reduced row of a step in one launch: rows of different key counts (one and several
// chunks) and modes, some sequences read by two rows, heads merged and normalised on the device.
TEST(OpsGpu, AttentionStatsMatchEntropix) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (int heads : {1, 8, 32}) {
    SCOPED_TRACE(testing::Message() << heads << " heads");
    const std::vector<int32_t> keys = {1, 17, 1000, 4096, 5000};  // Per sequence.
    std::vector<std::vector<float>> scores;
    std::vector<DeviceArray<float>*> owned;
    std::vector<float*> table;
    for (int32_t k : keys) {
      scores.push_back(Normal(rng, int64_t{heads} * k, 3.0f));
      owned.push_back(new DeviceArray<float>(scores.back()));
      table.push_back(owned.back()->get());
    }
    // Rows: every sequence in EXACT mode, then every sequence in REFERENCE mode (4096 slots).
    std::vector<int32_t> seq, slots;
    std::vector<entropix::AttentionMode> modes;
    for (auto mode : {entropix::AttentionMode::kExact, entropix::AttentionMode::kReference}) {
      for (size_t i = 0; i < keys.size(); ++i) {
        seq.push_back(static_cast<int32_t>(i));
        slots.push_back(mode == entropix::AttentionMode::kReference ? std::max(4096, keys[i])
                                                                    : keys[i]);
        modes.push_back(mode);
      }
    }
    const int64_t rows = static_cast<int64_t>(seq.size());
    const int64_t max_chunks = AttentionStatsChunks(5000);
    DeviceArray<float*> d_table(table);
    DeviceArray<int32_t> d_keys(keys), d_seq(seq), d_slots(slots);
    AttentionStatsCall call(rows, heads, max_chunks);
    call.params.scores = d_table.get();
    call.params.keys = d_keys.get();
    call.params.seq = d_seq.get();
    call.params.slots = d_slots.get();
    ExpectOk(LaunchAttentionStats(call.params, nullptr));
    const auto got_heads = call.merged.Download();
    const auto got_bad = call.bad.Download();
    const auto got_sums = call.sums.Download();
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t k = keys[seq[r]];
      SCOPED_TRACE(testing::Message() << k << " keys, mode " << static_cast<int>(modes[r]));
      auto want =
          entropix::ComputeAttentionMetrics(scores[seq[r]].data(), heads, k, k, modes[r], 4096);
      ASSERT_TRUE(want.ok()) << want.status();
      EXPECT_EQ(got_bad[r], 0);
      std::vector<entropix::AttentionHeadState> states(heads);
      std::memcpy(static_cast<void*>(states.data()), &got_heads[r * heads],
                  heads * sizeof(AttentionHeadPartial));
      const double agreement = std::accumulate(got_sums.begin() + r * max_chunks,
                                               got_sums.begin() + (r + 1) * max_chunks, 0.0);
      auto got = entropix::CombineAttentionMetrics(states, agreement, modes[r], 4096);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_NEAR(got->attn_entropy, want->attn_entropy, 1e-4 * (1 + want->attn_entropy));
      EXPECT_NEAR(got->attn_varentropy, want->attn_varentropy, 1e-4 * (1 + want->attn_varentropy));
      EXPECT_NEAR(got->attn_head_varentropy, want->attn_head_varentropy,
                  1e-4 * (1 + want->attn_head_varentropy));
      EXPECT_NEAR(got->agreement, want->agreement, 1e-5 * (1 + want->agreement));
      EXPECT_NEAR(got->interaction_strength, want->interaction_strength,
                  1e-5 * (1 + want->interaction_strength));
    }
    for (DeviceArray<float>* array : owned) delete array;
  }
}

// A NaN or an infinite score flags its row (the host then fails that row), and only it.
TEST(OpsGpu, AttentionStatsFlagNonFiniteScores) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  const int heads = 4, keys = 2000;
  std::vector<float> clean = Normal(rng, heads * keys), nan = clean, inf = clean;
  nan[3 * keys + 1500] = NAN;
  inf[keys + 7] = -INFINITY;
  DeviceArray<float> d_clean(clean), d_nan(nan), d_inf(inf);
  DeviceArray<float*> table(std::vector<float*>{d_clean.get(), d_nan.get(), d_inf.get()});
  DeviceArray<int32_t> d_keys(std::vector<int32_t>{keys, keys, keys}),
      seq(std::vector<int32_t>{0, 1, 2}), slots(std::vector<int32_t>{keys, keys, keys});
  AttentionStatsCall call(3, heads, AttentionStatsChunks(keys));
  call.params.scores = table.get();
  call.params.keys = d_keys.get();
  call.params.seq = seq.get();
  call.params.slots = slots.get();
  ExpectOk(LaunchAttentionStats(call.params, nullptr));
  EXPECT_EQ(call.bad.Download(), (std::vector<int32_t>{0, 1, 1}));
}

}  // namespace
}  // namespace arbor::kernels
