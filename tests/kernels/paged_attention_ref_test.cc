// Paged KV append + paged attention against a float64 dense causal attention on fresh random
// inputs: block sizes 1, 3, 16; sequence lengths 1, 17, 1000; GQA ratios 1 and 4; prefill,
// extend and decode rows mixed in one batch, over shuffled (non-contiguous) block tables; and
// the last query's scaled scores. Both KV dtypes: with bf16 pools the reference uses the K/V
// rounded to bf16 (what the pools hold), so the tolerances are the fp32 ones. And each token's
// bits the same however the tokens around it are grouped, and a sibling's (a decode row sharing
// its prompt's blocks) whatever siblings share its step.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "base/bf16.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/paged_attention.h"
#include "kernels/paged_kv_append.h"
#include "tests/support/test_seed.h"

namespace arbor::kernels {
namespace {

struct SeqSpec {
  int kv_len;
  int new_tokens;
};

// K/V pools of one dtype, NaN-filled, and the layer view of them.
struct Pools {
  Pools(int64_t n, bool bf16) : bf16(bf16) {
    if (bf16) {
      k16.assign(n, 0x7fc0), v16.assign(n, 0x7fc0);  // bf16 NaN.
    } else {
      k32.assign(n, NAN), v32.assign(n, NAN);
    }
  }
  PagedKvLayer Layer(int64_t blocks, int64_t block_size, int64_t kv_heads, int64_t head_dim) {
    PagedKvLayer layer{nullptr, nullptr, blocks, block_size, kv_heads, head_dim};
    if (bf16) {
      layer.k_bf16 = k16.data(), layer.v_bf16 = v16.data();
    } else {
      layer.k = k32.data(), layer.v = v32.data();
    }
    return layer;
  }
  void Write(bool key, int64_t i, float x) {
    if (bf16) {
      (key ? k16 : v16)[i] = base::FloatToBf16(x);
    } else {
      (key ? k32 : v32)[i] = x;
    }
  }
  float Read(bool key, int64_t i) const {
    return bf16 ? base::Bf16ToFloat((key ? k16 : v16)[i]) : (key ? k32 : v32)[i];
  }
  bool bf16;
  std::vector<float> k32, v32;
  std::vector<uint16_t> k16, v16;
};

// Per-sequence dense K/V of a CheckBatch batch, as its pools hold them: sequence s's position
// pos in k[s] and v[s] from pos·width.
struct DenseKv {
  std::vector<std::vector<float>> k, v;
};

// Draws each sequence's dense K/V (its K, then its V, sequence by sequence, from `normal`, which
// the caller shares so the draws continue its sequence). The already-cached prefix is written
// straight into its pool slots; the new tokens' rows go to k_new / v_new (stride `kv_stride`) for
// the append op.
DenseKv FillKv(std::mt19937& rng, std::normal_distribution<float>& normal,
               const std::vector<SeqSpec>& specs, const PagedBatch& batch, int64_t block_size,
               int64_t width, int64_t kv_stride, Pools& pools, std::vector<float>& k_new,
               std::vector<float>& v_new) {
  const int64_t num_seqs = specs.size();
  const bool bf16 = pools.bf16;
  // What a pool of this dtype holds of x.
  auto stored = [bf16](float x) { return bf16 ? base::Bf16ToFloat(base::FloatToBf16(x)) : x; };
  DenseKv dense{std::vector<std::vector<float>>(num_seqs),
                std::vector<std::vector<float>>(num_seqs)};
  std::vector<std::vector<float>>& k_all = dense.k;
  std::vector<std::vector<float>>& v_all = dense.v;
  for (int64_t s = 0; s < num_seqs; ++s) {
    k_all[s].resize(specs[s].kv_len * width);
    v_all[s].resize(specs[s].kv_len * width);
    for (float& x : k_all[s]) x = stored(normal(rng));
    for (float& x : v_all[s]) x = stored(normal(rng));
    const int64_t first_new = specs[s].kv_len - specs[s].new_tokens;
    for (int64_t pos = 0; pos < specs[s].kv_len; ++pos) {
      if (pos < first_new) {
        const int64_t slot = PagedSlot(batch, block_size, s, pos);
        for (int64_t i = 0; i < width; ++i) {
          pools.Write(/*key=*/true, slot * width + i, k_all[s][pos * width + i]);
          pools.Write(/*key=*/false, slot * width + i, v_all[s][pos * width + i]);
        }
      } else {
        const int64_t t = batch.q_start[s] + pos - first_new;
        std::copy_n(&k_all[s][pos * width], width, &k_new[t * kv_stride]);
        std::copy_n(&v_all[s][pos * width], width, &v_new[t * kv_stride]);
      }
    }
  }
  return dense;
}

// One head of token t (sequence s, at position pos) against a float64 dense causal attention
// over the sequence's dense K/V: `q` and `out` are the head's query and output, `kv_head` the kv
// head it reads, `scores` its scaled scores where the token reports them (else null).
void ExpectHeadMatchesFloat64(const float* q, const std::vector<float>& k,
                              const std::vector<float>& v, int64_t width, int64_t head_dim,
                              int64_t kv_head, int64_t pos, const float* scores, const float* out,
                              int64_t s, int64_t t, int64_t h) {
  std::vector<double> logits(pos + 1);
  double max = -INFINITY;
  for (int64_t j = 0; j <= pos; ++j) {
    double dot = 0;
    for (int64_t d = 0; d < head_dim; ++d) {
      dot += double{q[d]} * k[j * width + kv_head * head_dim + d];
    }
    logits[j] = dot / std::sqrt(double(head_dim));
    max = std::max(max, logits[j]);
  }
  if (scores != nullptr) {
    for (int64_t j = 0; j <= pos; ++j) {
      ASSERT_NEAR(scores[j], logits[j], 1e-5 * (1 + std::abs(logits[j])))
          << "scores seq " << s << " head " << h << " key " << j;
    }
  }
  double sum = 0;
  for (double& l : logits) sum += (l = std::exp(l - max));
  for (int64_t d = 0; d < head_dim; ++d) {
    double want = 0;
    for (int64_t j = 0; j <= pos; ++j) {
      want += logits[j] / sum * v[j * width + kv_head * head_dim + d];
    }
    ASSERT_NEAR(out[d], want, 2e-5)
        << "seq " << s << " token " << t << " head " << h << " dim " << d;
  }
}

// The appended slots hold exactly the new K/V.
void ExpectAppended(const Pools& pools, const PagedBatch& batch, int64_t block_size,
                    const std::vector<SeqSpec>& specs, int64_t width, const DenseKv& dense) {
  const int64_t num_seqs = specs.size();
  for (int64_t s = 0; s < num_seqs; ++s) {
    for (int64_t pos = specs[s].kv_len - specs[s].new_tokens; pos < specs[s].kv_len; ++pos) {
      const int64_t slot = PagedSlot(batch, block_size, s, pos);
      for (int64_t i = 0; i < width; ++i) {
        ASSERT_EQ(pools.Read(/*key=*/true, slot * width + i), dense.k[s][pos * width + i]);
        ASSERT_EQ(pools.Read(/*key=*/false, slot * width + i), dense.v[s][pos * width + i]);
      }
    }
  }
}

void CheckBatch(std::mt19937& rng, int64_t block_size, int64_t kv_heads, int64_t group,
                const std::vector<SeqSpec>& specs, ThreadPool* pool, int64_t head_dim = 16,
                bool bf16 = false) {
  SCOPED_TRACE(testing::Message() << "block_size " << block_size << " group " << group
                                  << " head_dim " << head_dim << " bf16 " << bf16);
  std::normal_distribution<float> normal;
  const int64_t heads = kv_heads * group, width = kv_heads * head_dim;
  const int64_t num_seqs = specs.size();
  // Block tables: a shuffled pool so neighbouring positions live in scattered blocks.
  int64_t num_blocks = 0;
  for (const SeqSpec& s : specs) num_blocks += (s.kv_len + block_size - 1) / block_size;
  std::vector<int32_t> block_ids(num_blocks);
  for (int64_t i = 0; i < num_blocks; ++i) block_ids[i] = i;
  std::shuffle(block_ids.begin(), block_ids.end(), rng);
  std::vector<int32_t> q_start = {0}, kv_len, block_start = {0};
  for (const SeqSpec& s : specs) {
    q_start.push_back(q_start.back() + s.new_tokens);
    kv_len.push_back(s.kv_len);
    block_start.push_back(block_start.back() + (s.kv_len + block_size - 1) / block_size);
  }
  const int64_t num_tokens = q_start.back();
  Pools pools(num_blocks * block_size * width, bf16);
  const PagedBatch batch{num_seqs, q_start.data(), kv_len.data(), block_start.data(),
                         block_ids.data()};
  const PagedKvLayer cache = pools.Layer(num_blocks, block_size, kv_heads, head_dim);
  const int64_t q_stride = heads * head_dim + 3, kv_stride = width + 1;
  std::vector<float> q(num_tokens * q_stride), k_new(num_tokens * kv_stride),
      v_new(num_tokens * kv_stride);
  for (float& x : q) x = normal(rng);
  // Dense per-sequence K/V; the already-cached prefix is written straight into its slots, the new
  // tokens go through the append op.
  const DenseKv dense =
      FillKv(rng, normal, specs, batch, block_size, width, kv_stride, pools, k_new, v_new);
  PagedKvAppendRef({batch, cache, k_new.data(), v_new.data(), kv_stride, kv_stride});
  const int64_t out_stride = heads * head_dim + 2;
  std::vector<float> out(num_tokens * out_stride, NAN);
  std::vector<std::vector<float>> scores(num_seqs);
  std::vector<float*> score_ptrs(num_seqs, nullptr);
  for (int64_t s = 0; s < num_seqs; s += 2) {  // Every other sequence asks for its scores.
    scores[s].assign(heads * specs[s].kv_len, NAN);
    score_ptrs[s] = scores[s].data();
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  PagedAttentionRef(
      {batch, cache, q.data(), out.data(), q_stride, out_stride, heads, scale, score_ptrs.data()},
      pool);

  for (int64_t s = 0; s < num_seqs; ++s) {
    const int64_t first_new = specs[s].kv_len - specs[s].new_tokens;
    for (int64_t t = q_start[s]; t < q_start[s + 1]; ++t) {
      const int64_t pos = first_new + t - q_start[s];
      for (int64_t h = 0; h < heads; ++h) {
        const float* head_scores = score_ptrs[s] != nullptr && t == q_start[s + 1] - 1
                                       ? scores[s].data() + h * specs[s].kv_len
                                       : nullptr;
        // The first failure ends the batch's check, as it did when the check was inline.
        ASSERT_NO_FATAL_FAILURE(ExpectHeadMatchesFloat64(
            q.data() + t * q_stride + h * head_dim, dense.k[s], dense.v[s], width, head_dim,
            /*kv_head=*/h / group, pos, head_scores, out.data() + t * out_stride + h * head_dim, s,
            t, h));
      }
      EXPECT_TRUE(std::isnan(out[t * out_stride + heads * head_dim])) << "wrote past the row";
    }
  }
  ExpectAppended(pools, batch, block_size, specs, width, dense);
}

class PagedAttentionDtypes : public ::testing::TestWithParam<bool> {};

TEST_P(PagedAttentionDtypes, MixedBatchesMatchFloat64) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  ThreadPool pool(2);
  for (int64_t block_size : {1, 3, 16}) {
    for (int64_t group : {1, 4}) {
      // Decode rows (1 new token), a whole prompt, an extend chunk, long contexts.
      std::vector<SeqSpec> specs = {{1, 1}, {17, 17}, {17, 1}, {17, 5}, {1000, 1}, {1000, 7}};
      CheckBatch(rng, block_size, /*kv_heads=*/2, group, specs, &pool, /*head_dim=*/16, GetParam());
    }
  }
}

// Head widths that take every path of the vectorised weighted sum and dot product: scalar only
// (5), one to seven 8-float vectors (16, 40), 64-float slices with a vector (72) or without (128).
TEST_P(PagedAttentionDtypes, EveryHeadWidth) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (int64_t head_dim : {5, 16, 40, 72, 128}) {
    CheckBatch(rng, /*block_size=*/16, /*kv_heads=*/2, /*group=*/2, {{17, 1}, {300, 3}}, nullptr,
               head_dim, GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(F32AndBf16, PagedAttentionDtypes, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "bf16" : "f32"; });

TEST(PagedAttentionRef, LongPrefillSingleThreaded) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  CheckBatch(rng, /*block_size=*/16, /*kv_heads=*/1, /*group=*/4, {{1000, 1000}}, nullptr);
}

// A token's output and its scores are the same bits whether it is attended alone (a decode
// row), in a whole prompt's blocks of tokens (whose scores come from key panels), or in chunks
// cut anywhere (an extend), on one thread or two: 150 tokens span several blocks of tokens and
// tiles of keys.
void CheckTokensOwnBits(std::mt19937& rng, int64_t group, int64_t dim, bool bf16) {
  SCOPED_TRACE(testing::Message() << "group " << group << " head_dim " << dim);
  std::normal_distribution<float> normal;
  constexpr int64_t kTokens = 150, kBlock = 16, kKvHeads = 2;
  const int64_t kGroup = group, kDim = dim;
  const int64_t kHeads = kKvHeads * kGroup, kWidth = kKvHeads * kDim;
  constexpr int64_t kBlocks = (kTokens + kBlock - 1) / kBlock;
  std::vector<int32_t> block_ids(kBlocks);
  for (int64_t i = 0; i < kBlocks; ++i) block_ids[i] = static_cast<int32_t>(i);
  std::shuffle(block_ids.begin(), block_ids.end(), rng);
  Pools pools(kBlocks * kBlock * kWidth, bf16);
  for (int64_t i = 0; i < kBlocks * kBlock * kWidth; ++i) {
    pools.Write(true, i, normal(rng));
    pools.Write(false, i, normal(rng));
  }
  const PagedKvLayer cache = pools.Layer(kBlocks, kBlock, kKvHeads, kDim);
  std::vector<float> q(kTokens * kHeads * kDim);
  for (float& x : q) x = normal(rng);
  // Tokens [begin, end) as one sequence's new tokens: their outputs and the last one's scores.
  auto attend = [&](int64_t begin, int64_t end, ThreadPool* pool) {
    const std::vector<int32_t> q_start = {0, static_cast<int32_t>(end - begin)};
    const std::vector<int32_t> kv_len = {static_cast<int32_t>(end)};
    const std::vector<int32_t> block_start = {0, static_cast<int32_t>(kBlocks)};
    std::vector<float> out((end - begin) * kHeads * kDim), scores(kHeads * end);
    float* scores_ptr = scores.data();
    PagedAttentionRef({{1, q_start.data(), kv_len.data(), block_start.data(), block_ids.data()},
                       cache,
                       q.data() + begin * kHeads * kDim,
                       out.data(),
                       kHeads * kDim,
                       kHeads * kDim,
                       kHeads,
                       0.125f,
                       &scores_ptr},
                      pool);
    return std::make_pair(out, scores);
  };
  ThreadPool two(2);
  const auto [all, all_scores] = attend(0, kTokens, &two);
  const int64_t row = kHeads * kDim;
  for (int64_t t = 0; t < kTokens; ++t) {
    const auto [alone, scores] = attend(t, t + 1, nullptr);
    ASSERT_EQ(std::memcmp(alone.data(), all.data() + t * row, row * sizeof(float)), 0)
        << "token " << t << " alone";
    if (t == kTokens - 1) {
      ASSERT_EQ(std::memcmp(scores.data(), all_scores.data(), scores.size() * sizeof(float)), 0);
    }
  }
  for (const std::vector<int64_t>& cuts :
       {std::vector<int64_t>{37, 80, 150}, {1, 17, 18, 100, 150}, {64, 65, 129, 150}}) {
    int64_t begin = 0;
    for (int64_t cut : cuts) {
      const auto [chunk, scores] = attend(begin, cut, &two);
      ASSERT_EQ(std::memcmp(chunk.data(), all.data() + begin * row, chunk.size() * sizeof(float)),
                0)
          << "chunk " << begin << "–" << cut;
      begin = cut;
    }
  }
}

TEST_P(PagedAttentionDtypes, EachTokenHasItsOwnBitsInAnyBlock) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (const auto& [group, dim] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 64}, {2, 40}, {3, 64}, {4, 128}, {6, 72}, {3, 20}}) {
    CheckTokensOwnBits(rng, group, dim, GetParam());
  }
}

// Sequences of `tables` (block tables over `cache`) with `kv_len` keys, each decoding one token
// (its query q[s·heads·dim …]) in one step.
struct DecodeRows {
  const PagedKvLayer& cache;
  const std::vector<std::vector<int32_t>>& tables;
  const std::vector<int32_t>& kv_len;
  const std::vector<float>& q;
  int64_t heads, dim;

  // Sequences `seqs` in one step: their outputs, row after row, and each one's scores.
  std::pair<std::vector<float>, std::vector<std::vector<float>>> Attend(
      const std::vector<int64_t>& seqs, ThreadPool* pool) const {
    const int64_t row = heads * dim;
    std::vector<int32_t> q_start = {0}, lengths, block_start = {0}, block_ids;
    std::vector<float> queries;
    for (int64_t s : seqs) {
      q_start.push_back(q_start.back() + 1);
      lengths.push_back(kv_len[s]);
      block_ids.insert(block_ids.end(), tables[s].begin(), tables[s].end());
      block_start.push_back(static_cast<int32_t>(block_ids.size()));
      queries.insert(queries.end(), q.begin() + s * row, q.begin() + (s + 1) * row);
    }
    const int64_t n = static_cast<int64_t>(seqs.size());
    std::vector<float> out(n * row);
    std::vector<std::vector<float>> scores(n);
    std::vector<float*> score_ptrs;
    for (int64_t i = 0; i < n; ++i) {
      scores[i].resize(heads * kv_len[seqs[i]]);
      score_ptrs.push_back(scores[i].data());
    }
    PagedAttentionRef({{n, q_start.data(), lengths.data(), block_start.data(), block_ids.data()},
                       cache,
                       queries.data(),
                       out.data(),
                       row,
                       row,
                       heads,
                       0.125f,
                       score_ptrs.data()},
                      pool);
    return {out, scores};
  }
};

// Decode rows of sibling sequences whose block tables begin with the same blocks (a search's
// branches; paged_attention_plan.h groups them) each get the bits they get alone: twelve
// siblings of a 150-key prompt (nine shared full blocks, then 1–40 keys of their own in their
// own blocks), one that shares only its first 100 keys, and a stranger, in one step on two
// threads, with the short sibling (100 shared keys) and without it (144).
TEST_P(PagedAttentionDtypes, SiblingsSharingAPrefixGetTheirOwnBits) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  constexpr int64_t kBlock = 16, kKvHeads = 2, kGroup = 3, kDim = 64, kShared = 9;
  constexpr int64_t kHeads = kKvHeads * kGroup, kWidth = kKvHeads * kDim, kRow = kHeads * kDim;
  // Tables: blocks 0–8 shared; each sequence's own blocks after them, numbered on.
  std::vector<std::vector<int32_t>> tables;
  std::vector<int32_t> kv_len;
  int32_t next_block = kShared;
  auto add = [&](int64_t shared_blocks, int64_t keys) {
    std::vector<int32_t> table;
    for (int64_t b = 0; b < shared_blocks; ++b) table.push_back(static_cast<int32_t>(b));
    while (static_cast<int64_t>(table.size()) * kBlock < keys) table.push_back(next_block++);
    tables.push_back(table);
    kv_len.push_back(static_cast<int32_t>(keys));
  };
  for (int64_t s = 0; s < 12; ++s) add(kShared, kShared * kBlock + 1 + (s * 7) % 40);
  add(0, 90);   // A stranger.
  add(7, 100);  // Shares its first 100 keys.
  Pools pools(next_block * kBlock * kWidth, GetParam());
  for (int64_t i = 0; i < next_block * kBlock * kWidth; ++i) {
    pools.Write(true, i, normal(rng));
    pools.Write(false, i, normal(rng));
  }
  const PagedKvLayer cache = pools.Layer(next_block, kBlock, kKvHeads, kDim);
  std::vector<float> q(tables.size() * kRow);
  for (float& x : q) x = normal(rng);
  const DecodeRows rows{cache, tables, kv_len, q, kHeads, kDim};
  ThreadPool two(2);
  for (int64_t last : {13, 12}) {  // With the short sibling, then without it.
    std::vector<int64_t> seqs;
    for (int64_t s = 0; s <= last; ++s) seqs.push_back(s);
    const auto [together, together_scores] = rows.Attend(seqs, &two);
    for (int64_t i = 0; i < static_cast<int64_t>(seqs.size()); ++i) {
      const auto [alone, alone_scores] = rows.Attend({seqs[i]}, nullptr);
      ASSERT_EQ(std::memcmp(alone.data(), together.data() + i * kRow, kRow * sizeof(float)), 0)
          << "sequence " << seqs[i] << " of " << seqs.size();
      ASSERT_EQ(std::memcmp(alone_scores[0].data(), together_scores[i].data(),
                            alone_scores[0].size() * sizeof(float)),
                0)
          << "scores of sequence " << seqs[i];
    }
  }
}

// A lone decode row of 512 keys or more on more than one thread goes by phases
// (attention_row_phases.h): it matches float64 at head widths of whole 32-float slices (64, 96)
// and not (5, 40), and has the bits it has on one thread and beside another row (the units'
// paths), at three kv heads of three queries, eight of four and two of three, 1,500 keys. So do
// three siblings sharing 608 keys, as one row set by phases.
TEST_P(PagedAttentionDtypes, LongDecodeRowSetsGoByPhasesWithTheirOwnBits) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  ThreadPool two(2), three(3);
  for (int64_t head_dim : {5, 40, 64, 96}) {
    CheckBatch(rng, /*block_size=*/16, /*kv_heads=*/3, /*group=*/3, {{700, 1}}, &two, head_dim,
               GetParam());
  }
  std::normal_distribution<float> normal;
  constexpr int64_t kBlock = 16;
  const std::vector<int32_t> kv_len = {1500, 600};
  for (const auto& [kv_heads, group, dim] :
       std::vector<std::array<int64_t, 3>>{{3, 3, 64}, {8, 4, 64}, {2, 3, 40}}) {
    SCOPED_TRACE(testing::Message() << kv_heads << " kv heads of " << group << ", dim " << dim);
    const int64_t heads = kv_heads * group, width = kv_heads * dim, row = heads * dim;
    std::vector<int32_t> ids(94 + 38);  // Both sequences' blocks, shuffled.
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    std::shuffle(ids.begin(), ids.end(), rng);
    const std::vector<std::vector<int32_t>> tables = {{ids.begin(), ids.begin() + 94},
                                                      {ids.begin() + 94, ids.end()}};
    const int64_t values = static_cast<int64_t>(ids.size()) * kBlock * width;
    Pools pools(values, GetParam());
    for (int64_t i = 0; i < values; ++i) {
      pools.Write(true, i, normal(rng));
      pools.Write(false, i, normal(rng));
    }
    const PagedKvLayer cache = pools.Layer(static_cast<int64_t>(ids.size()), kBlock, kv_heads, dim);
    std::vector<float> q(2 * row);
    for (float& x : q) x = normal(rng);
    const DecodeRows rows{cache, tables, kv_len, q, heads, dim};
    const auto [units, units_scores] = rows.Attend({0}, nullptr);
    for (ThreadPool* pool : {&two, &three}) {
      const auto [phases, phases_scores] = rows.Attend({0}, pool);
      ASSERT_EQ(std::memcmp(phases.data(), units.data(), row * sizeof(float)), 0)
          << pool->num_threads() << " threads";
      ASSERT_EQ(phases_scores[0], units_scores[0]);
    }
    const auto [beside, beside_scores] = rows.Attend({0, 1}, &two);
    ASSERT_EQ(std::memcmp(beside.data(), units.data(), row * sizeof(float)), 0) << "beside";
    // Three siblings of the first sequence's first 38 blocks (608 keys), each with 5–31 keys of
    // its own in two blocks of its own: one row set, too few queries for panels, by phases.
    std::vector<std::vector<int32_t>> sibling_tables;
    std::vector<int32_t> sibling_keys;
    for (int64_t s = 0; s < 3; ++s) {
      sibling_tables.emplace_back(ids.begin(), ids.begin() + 38);
      sibling_tables.back().push_back(ids[94 + 2 * s]);
      sibling_tables.back().push_back(ids[95 + 2 * s]);
      sibling_keys.push_back(static_cast<int32_t>(608 + 5 + 13 * s));
    }
    std::vector<float> sibling_q(3 * row);
    for (float& x : sibling_q) x = normal(rng);
    const DecodeRows siblings{cache, sibling_tables, sibling_keys, sibling_q, heads, dim};
    const auto [together, together_scores] = siblings.Attend({0, 1, 2}, &two);
    for (int64_t s = 0; s < 3; ++s) {
      const auto [alone, alone_scores] = siblings.Attend({s}, nullptr);
      ASSERT_EQ(std::memcmp(alone.data(), together.data() + s * row, row * sizeof(float)), 0)
          << "sibling " << s;
      ASSERT_EQ(alone_scores[0], together_scores[s]) << "sibling " << s;
    }
  }
}

}  // namespace
}  // namespace arbor::kernels
