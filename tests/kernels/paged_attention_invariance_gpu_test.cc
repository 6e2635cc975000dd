// Paged attention with fixed split sizes (PagedAttentionLaunch::split_keys, the batch-invariant
// launches): a query's output row and scores are the same bits alone and among other sequences
// of any length — one split or many, so written directly or merged from partials — in both
// kernels and both pool dtypes, and they match the CPU reference. Skips without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/paged_attention.h"
#include "kernels/paged_attention_cuda.h"
#include "tests/kernels/gpu_test_support.h"

namespace arbor::kernels {
namespace {

constexpr int64_t kBlock = 16, kKvHeads = 2, kGroup = 4, kHeads = kKvHeads * kGroup;

// A sequence of the shared pool: kv_len keys in its own blocks, its last n_new rows queried with
// the same q whatever batch it is in.
struct Sequence {
  int32_t kv_len = 0, n_new = 0;
  std::vector<int32_t> blocks;
  std::vector<float> q;  // [n_new, kHeads, head_dim]
};

struct Result {
  std::vector<float> out;     // [n_new, kHeads, head_dim]
  std::vector<float> scores;  // [kHeads, kv_len], its last query's.
};

class Pool {
 public:
  Pool(std::vector<int32_t> kv_len, std::vector<int32_t> n_new, int64_t head_dim, bool bf16,
       std::mt19937& rng)
      : d_(head_dim), bf16_(bf16) {
    int64_t blocks = 0;
    for (int32_t len : kv_len) blocks += (len + kBlock - 1) / kBlock;
    std::vector<int32_t> ids(blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    int64_t next = 0;
    for (size_t s = 0; s < kv_len.size(); ++s) {
      Sequence& seq = seqs_.emplace_back();
      seq.kv_len = kv_len[s];
      seq.n_new = n_new[s];
      const int64_t n = (kv_len[s] + kBlock - 1) / kBlock;
      seq.blocks.assign(ids.begin() + next, ids.begin() + next + n);
      next += n;
      seq.q = Normal(rng, n_new[s] * kHeads * d_, 2.0f);
    }
    const int64_t elements = blocks * kBlock * kKvHeads * d_;
    // Rounded to bf16 either way, so both dtypes attend over the same values.
    k_ = Widen(ToBf16(Normal(rng, elements)));
    v_ = Widen(ToBf16(Normal(rng, elements)));
    k16_ = ToBf16(k_);
    v16_ = ToBf16(v_);
    layer_ = {nullptr, nullptr, blocks, kBlock, kKvHeads, d_};
  }

  // One launch over the sequences `order` (indices), split every `split_keys` keys; each listed
  // sequence's rows. `reference`: the CPU reference's instead.
  std::vector<Result> Run(const std::vector<int>& order, bool block_kernel, bool reference) {
    std::vector<int32_t> q_start{0}, kv_len, block_start{0}, block_ids;
    std::vector<float> q;
    std::vector<std::vector<float>> scores;
    for (int s : order) {
      const Sequence& seq = seqs_[s];
      q_start.push_back(q_start.back() + seq.n_new);
      kv_len.push_back(seq.kv_len);
      block_ids.insert(block_ids.end(), seq.blocks.begin(), seq.blocks.end());
      block_start.push_back(static_cast<int32_t>(block_ids.size()));
      q.insert(q.end(), seq.q.begin(), seq.q.end());
      scores.emplace_back(kHeads * seq.kv_len);
    }
    const int64_t tokens = q_start.back(), width = kHeads * d_;
    std::vector<float> out(tokens * width);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d_));
    const int64_t seqs = static_cast<int64_t>(order.size());
    if (reference) {
      std::vector<float*> table;
      for (auto& row : scores) table.push_back(row.data());
      PagedKvLayer host = layer_;
      host.k = k_.data();
      host.v = v_.data();
      PagedAttentionRef(
          {{seqs, q_start.data(), kv_len.data(), block_start.data(), block_ids.data()},
           host,
           q.data(),
           out.data(),
           width,
           width,
           kHeads,
           scale,
           table.data()},
          nullptr);
      return Collect(order, out, scores);
    }
    DeviceArray<int32_t> d_q_start(q_start), d_kv_len(kv_len), d_block_start(block_start),
        d_block_ids(block_ids);
    DeviceArray<float> d_q(q), d_out(out.size()), d_k(k_), d_v(v_);
    DeviceArray<uint16_t> d_k16(k16_), d_v16(v16_);
    DeviceScores d_scores(scores);
    PagedKvLayer dev = layer_;
    if (bf16_) {
      dev.k_bf16 = d_k16.get();
      dev.v_bf16 = d_v16.get();
    } else {
      dev.k = d_k.get();
      dev.v = d_v.get();
    }
    const int32_t longest = *std::max_element(kv_len.begin(), kv_len.end());
    const int64_t splits = InvariantAttentionSplits(longest);
    DeviceArray<float> workspace(
        std::max<int64_t>(1, PagedAttentionWorkspaceFloats(tokens, kHeads, d_, splits)));
    d_out.Poison();
    ExpectOk(LaunchPagedAttention(
        {{seqs, d_q_start.get(), d_kv_len.get(), d_block_start.get(), d_block_ids.get()},
         dev,
         d_q.get(),
         d_out.get(),
         width,
         width,
         kHeads,
         scale,
         d_scores.table->get()},
        {tokens, splits, workspace.get(), {}, block_kernel, kInvariantSplitKeys}, nullptr));
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = d_scores.rows[i]->Download();
    return Collect(order, d_out.Download(), scores);
  }

 private:
  std::vector<Result> Collect(const std::vector<int>& order, const std::vector<float>& out,
                              const std::vector<std::vector<float>>& scores) const {
    std::vector<Result> results;
    int64_t row = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      const int64_t n = seqs_[order[i]].n_new * kHeads * d_;
      results.push_back({{out.begin() + row, out.begin() + row + n}, scores[i]});
      row += n;
    }
    return results;
  }

  int64_t d_;
  bool bf16_;
  std::vector<Sequence> seqs_;
  std::vector<float> k_, v_;
  std::vector<uint16_t> k16_, v16_;
  PagedKvLayer layer_;
};

void ExpectSameBits(const Result& a, const Result& b, const char* what) {
  ASSERT_EQ(a.out.size(), b.out.size());
  EXPECT_EQ(std::memcmp(a.out.data(), b.out.data(), a.out.size() * sizeof(float)), 0) << what;
  EXPECT_EQ(std::memcmp(a.scores.data(), b.scores.data(), a.scores.size() * sizeof(float)), 0)
      << what << " (scores)";
}

TEST(OpsGpu, FixedSplitsMakeAQueryIndependentOfItsBatch) {
  SKIP_WITHOUT_DEVICE();
  std::mt19937 rng = Rng();
  for (int64_t head_dim : {16, 64}) {  // 64: the warp-tiled kernel too.
    for (bool bf16 : {false, true}) {
      // 0: one split (300 keys); 1: three (1,300); 2: a 4,096-key decode row; 3: a prefill chunk
      // of 37 rows ending at 1,100 keys; 4: a short decode row.
      Pool pool({300, 1300, 4096, 1100, 20}, {1, 1, 1, 37, 1}, head_dim, bf16, rng);
      const std::vector<std::vector<int>> batches = {{2, 0, 1}, {1, 3, 0}, {4, 3, 2, 1, 0}};
      for (bool block_kernel : {true, false}) {
        if (!block_kernel && !WarpAttentionServes(head_dim, kGroup)) continue;
        SCOPED_TRACE(testing::Message() << "head_dim " << head_dim << " bf16 " << bf16
                                        << " block kernel " << block_kernel);
        std::vector<Result> alone;
        for (int s = 0; s < 5; ++s) alone.push_back(pool.Run({s}, block_kernel, false)[0]);
        for (int s = 0; s < 5; ++s) {
          const Result want = pool.Run({s}, block_kernel, true)[0];
          ExpectClose(alone[s].out, want.out, 1e-5);
          ExpectClose(alone[s].scores, want.scores, 1e-6, 1e-6 * 2.0 * head_dim);
        }
        for (const std::vector<int>& batch : batches) {
          const std::vector<Result> together = pool.Run(batch, block_kernel, false);
          for (size_t i = 0; i < batch.size(); ++i) {
            ExpectSameBits(alone[batch[i]], together[i], "a query's row differs in company");
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace arbor::kernels
