#include <algorithm>
#include <vector>

#include "kernels/cpu_simd.h"
#include "kernels/paged_attention.h"
#include "kernels/thread_pool.h"

namespace arbor::kernels {
namespace {

// Query tokens of a sequence attended together: each K and V row read once from memory serves
// all of them (a long prompt's K/V outgrow the caches; read once per token they made prefill
// memory-bound), at the price of their scores held side by side (kBlockTokens · group · keys
// floats).
constexpr int64_t kBlockTokens = 16;
// Keys per tile: a tile's K (or V) rows stay in L1 while every token of the block meets them.
constexpr int64_t kTileKeys = 64;

// One unit of work: the query tokens [begin, end) of sequence `seq` against kv head `kv_head`.
struct Item {
  int64_t seq;
  int64_t begin;
  int64_t end;
  int64_t kv_head;
  int64_t cost;  // Query-key pairs, for handing out the heaviest first.
};

// The scratch of one thread's items, reused between them.
template <typename T>
struct Scratch {
  std::vector<float> scores;  // Token i's head g at (i·group + g)·keys, keys = the block's last's.
  std::vector<float> inverse_sums;  // [i·group + g].
  std::vector<const T*> k_rows, v_rows;
};

// All query heads of kv head `kv_head` for the query tokens [begin, end) of sequence `seq`: the K
// and V rows found once for the block, and each read once for all its tokens and up to four of
// its heads per pass (simd::DotRows, simd::WeightedRowSum), tile by tile of keys. Every score and
// weighted sum takes the same operations in the same order as for a token alone (both helpers
// are independent of how the keys are split and which queries share a call), so a token's
// output does not depend on the tokens beside it. T is the pools' element type (float, or
// uint16_t for bf16).
template <typename T>
void AttendBlock(const PagedAttentionParams& p, const T* k_pool, const T* v_pool, const Item& item,
                 Scratch<T>& s) {
  const PagedKvLayer& c = p.cache;
  const int64_t group = p.num_heads / c.num_kv_heads;
  const int64_t width = c.num_kv_heads * c.head_dim;
  const int64_t first_keys = PagedPosition(p.batch, item.seq, item.begin) + 1;
  const int64_t keys = first_keys + (item.end - item.begin - 1);  // The last token's.
  auto keys_of = [&](int64_t i) { return first_keys + i; };       // Token begin + i's.
  const int64_t tokens = item.end - item.begin;
  s.scores.resize(tokens * group * keys);
  s.inverse_sums.resize(tokens * group);
  s.k_rows.resize(keys);
  s.v_rows.resize(keys);
  for (int64_t j0 = 0; j0 < keys; j0 += c.block_size) {  // A block's rows are consecutive.
    const int64_t first =
        PagedSlot(p.batch, c.block_size, item.seq, j0) * width + item.kv_head * c.head_dim;
    const int64_t end = std::min(keys, j0 + c.block_size);
    for (int64_t j = j0; j < end; ++j) {
      s.k_rows[j] = k_pool + first + (j - j0) * width;
      s.v_rows[j] = v_pool + first + (j - j0) * width;
    }
  }
  const int64_t head0 = item.kv_head * group * c.head_dim;  // The group's first head's offset.
  auto scores = [&](int64_t i) { return s.scores.data() + i * group * keys; };
  for (int64_t j0 = 0; j0 < keys; j0 += kTileKeys) {
    for (int64_t i = 0; i < tokens; ++i) {
      const int64_t n = std::min(keys_of(i) - j0, kTileKeys);
      if (n <= 0) continue;
      simd::DotRows(p.q + (item.begin + i) * p.q_stride + head0, group, s.k_rows.data() + j0, n,
                    c.head_dim, p.scale, scores(i) + j0, keys);
    }
  }
  // The sequence's last query token's scores, where asked for.
  float* last_scores = item.end == p.batch.q_start[item.seq + 1] && p.last_scores != nullptr
                           ? p.last_scores[item.seq]
                           : nullptr;
  for (int64_t i = 0; i < tokens; ++i) {
    const int64_t n = keys_of(i);
    for (int64_t g = 0; g < group; ++g) {
      float* row = scores(i) + g * keys;
      if (last_scores != nullptr && i == tokens - 1) {
        std::copy(row, row + n, last_scores + (item.kv_head * group + g) * n);
      }
      s.inverse_sums[i * group + g] = 1.0f / simd::ExpShifted(row, n, simd::Max(row, n));
    }
  }
  for (int64_t j0 = 0; j0 < keys; j0 += kTileKeys) {
    for (int64_t i = 0; i < tokens; ++i) {
      const int64_t n = std::min(keys_of(i) - j0, kTileKeys);
      if (n <= 0) continue;
      const bool last_tile = j0 + n == keys_of(i);
      simd::WeightedRowSum(scores(i) + j0, keys, group, s.v_rows.data() + j0, n, c.head_dim,
                           last_tile ? s.inverse_sums.data() + i * group : nullptr,
                           p.out + (item.begin + i) * p.out_stride + head0, c.head_dim,
                           /*resume=*/j0 > 0);
    }
  }
}

// The step's items: each sequence's query tokens in blocks of up to kBlockTokens, per kv head,
// the heaviest first (the pool hands out consecutive chunks, so the last to start are light).
std::vector<Item> Items(const PagedAttentionParams& p) {
  std::vector<Item> items;
  for (int64_t seq = 0; seq < p.batch.num_seqs; ++seq) {
    for (int64_t begin = p.batch.q_start[seq]; begin < p.batch.q_start[seq + 1];
         begin += kBlockTokens) {
      const int64_t end = std::min<int64_t>(begin + kBlockTokens, p.batch.q_start[seq + 1]);
      const int64_t last_keys = PagedPosition(p.batch, seq, end - 1) + 1;
      const int64_t cost = (end - begin) * (2 * last_keys - (end - begin) + 1) / 2;
      for (int64_t h = 0; h < p.cache.num_kv_heads; ++h) items.push_back({seq, begin, end, h, cost});
    }
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.cost > b.cost; });
  return items;
}

template <typename T>
void Attend(const PagedAttentionParams& p, const T* k_pool, const T* v_pool, ThreadPool* pool) {
  const std::vector<Item> items = Items(p);
  auto run = [&](int64_t begin, int64_t end) {
    Scratch<T> scratch;
    for (int64_t i = begin; i < end; ++i) AttendBlock(p, k_pool, v_pool, items[i], scratch);
  };
  if (pool == nullptr) {
    run(0, static_cast<int64_t>(items.size()));
  } else {
    pool->ParallelFor(static_cast<int64_t>(items.size()), 1, run);
  }
}

}  // namespace

void PagedAttentionRef(const PagedAttentionParams& p, ThreadPool* pool) {
  if (p.cache.bf16()) {
    Attend<uint16_t>(p, p.cache.k_bf16, p.cache.v_bf16, pool);
  } else {
    Attend<float>(p, p.cache.k, p.cache.v, pool);
  }
}

}  // namespace arbor::kernels
