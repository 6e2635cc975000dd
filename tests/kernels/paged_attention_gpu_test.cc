// Paged KV append and paged attention on the device against the CPU ops on the same pools (fp32
// and bf16, split-K, GQA 1/4/8, block sizes 1, 3 and 16; the block-wide and, where it serves,
// the warp-tiled kernel), and cascade attention for sibling rows sharing prefix blocks against
// the CPU reference. Skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "kernels/paged_attention.h"
#include "kernels/paged_attention_cuda.h"
#include "kernels/paged_kv_append.h"
#include "kernels/paged_kv_append_cuda.h"
#include "tests/kernels/gpu_test_support.h"

namespace arbor::kernels {
namespace {

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

// Each split count with the block-wide kernel, and also with the warp-tiled one when it serves.
std::vector<std::pair<int64_t, bool>> SplitsAndKernels(std::vector<int64_t> splits,
                                                       bool warp_serves) {
  std::vector<std::pair<int64_t, bool>> out;
  for (int64_t s : splits) {
    out.push_back({s, true});
    if (warp_serves) out.push_back({s, false});
  }
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
  // Both kernels where the warp-tiled one serves the shape.
  const bool warp_serves = WarpAttentionServes(c.head_dim, c.group);
  for (const auto& [splits, block_kernel] : SplitsAndKernels(
           {1, PagedAttentionSplits(tokens, c.num_kv_heads, max_len, multiprocessors), 7},
           warp_serves)) {
    SCOPED_TRACE(testing::Message() << "splits " << splits << " block kernel " << block_kernel);
    DeviceArray<float> out(want.size());
    DeviceArray<float> workspace(
        std::max<int64_t>(1, PagedAttentionWorkspaceFloats(tokens, heads, c.head_dim, splits)));
    out.Poison();
    for (auto& d : d_scores) d->Poison();
    ExpectOk(LaunchPagedAttention({dev_batch, dev_cache, d_q.get(), out.get(), heads * c.head_dim,
                                   heads * c.head_dim, heads, scale, d_score_table.get()},
                                  {tokens, splits, workspace.get(), {}, block_kernel}, nullptr));
    ExpectClose(out.Download(), want, 1e-5);
    // A score is q·k·scale with ‖q‖ ≈ 2√d and ‖k‖ ≈ √d: a sequence with few keys can have all
    // its scores near zero, where fp32 summation order alone moves them by ~1e-7 absolute.
    const double score_floor = 1e-6 * 2.0 * c.head_dim * scale;
    for (int64_t s = 0; s < seqs; ++s) {
      ExpectClose(d_scores[s]->Download(), scores[s], 1e-6, score_floor);
    }
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
    for (const auto& [splits, block_kernel] :
         SplitsAndKernels({1, 2}, WarpAttentionServes(head_dim, group))) {
      SCOPED_TRACE(testing::Message() << "splits " << splits << " prefix splits " << prefix_splits
                                      << " block kernel " << block_kernel);
      cascade.num_splits = prefix_splits;
      const PagedAttentionLaunch launch{seqs, splits, nullptr, cascade, block_kernel};
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

}  // namespace
}  // namespace arbor::kernels
