#include <algorithm>
#include <vector>

#include "kernels/cpu_simd.h"
#include "kernels/key_panels.h"
#include "kernels/paged_attention.h"
#include "kernels/thread_pool.h"

namespace arbor::kernels {
namespace {

// Query tokens of a sequence attended together: each K and V row read once from memory serves
// all of them (a long prompt's K/V outgrow the caches; read once per token they made prefill
// memory-bound), at the price of their scores held side by side (kBlockTokens · group · keys
// floats).
constexpr int64_t kBlockTokens = 16;
// Keys per tile: a tile's K (or V) rows stay in L1 while every token of the block meets them. A
// multiple of the panels' keys.
constexpr int64_t kTileKeys = 64;
static_assert(kTileKeys % simd::kPanelKeys == 0);

// A sequence with at least this many query tokens has its keys transposed into panels once per
// kv head (simd::TransposeKeys), and its scores taken against them (simd::DotPanels): the
// transposition is one pass over the keys, which kPanelTokens · group queries then meet.
constexpr int64_t kPanelTokens = kBlockTokens;

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

// The key panels of the step's sequences that take them: sequence s's kv head h at
// floats + offset[s] + h·head_floats[s] (offset −1: none).
struct Panels {
  std::vector<float> floats;
  std::vector<int64_t> offset;
  std::vector<int64_t> head_floats;

  float* Of(int64_t seq, int64_t kv_head) {
    return offset[seq] < 0 ? nullptr : floats.data() + offset[seq] + kv_head * head_floats[seq];
  }
};

// K/V row pointers of keys [j0, end) of sequence `seq`'s kv head `kv_head`, key j's in
// rows[j − j0].
template <typename T>
void FindRows(const PagedAttentionParams& p, const T* pool, int64_t seq, int64_t kv_head,
              int64_t j0, int64_t end, const T** rows) {
  const PagedKvLayer& c = p.cache;
  const int64_t width = c.num_kv_heads * c.head_dim;
  for (int64_t b0 = j0 - j0 % c.block_size; b0 < end; b0 += c.block_size) {
    // A block's rows are consecutive.
    const int64_t first = PagedSlot(p.batch, c.block_size, seq, b0) * width + kv_head * c.head_dim;
    for (int64_t j = std::max(b0, j0); j < std::min(end, b0 + c.block_size); ++j) {
      rows[j - j0] = pool + first + (j - b0) * width;
    }
  }
}

// All query heads of kv head `kv_head` for the query tokens [begin, end) of sequence `seq`: the K
// and V rows found once for the block, and each read once for all its tokens and up to four of
// its heads per pass (simd::DotRows, simd::WeightedRowSum), tile by tile of keys. Every score and
// weighted sum takes the same operations in the same order as for a token alone (both helpers
// are independent of how the keys are split and which queries share a call), so a token's
// output does not depend on the tokens beside it. The scores come from the sequence's key panels
// where it has them (null: from the K rows). T is the pools' element type (float, or uint16_t for
// bf16).
template <typename T>
void AttendBlock(const PagedAttentionParams& p, const T* k_pool, const T* v_pool,
                 const float* panels, const Item& item, Scratch<T>& s) {
  const PagedKvLayer& c = p.cache;
  const int64_t group = p.num_heads / c.num_kv_heads;
  const int64_t first_keys = PagedPosition(p.batch, item.seq, item.begin) + 1;
  const int64_t keys = first_keys + (item.end - item.begin - 1);  // The last token's.
  auto keys_of = [&](int64_t i) { return first_keys + i; };       // Token begin + i's.
  const int64_t tokens = item.end - item.begin;
  s.scores.resize(tokens * group * keys);
  s.inverse_sums.resize(tokens * group);
  s.v_rows.resize(keys);
  FindRows(p, v_pool, item.seq, item.kv_head, 0, keys, s.v_rows.data());
  if (panels == nullptr) {
    s.k_rows.resize(keys);
    FindRows(p, k_pool, item.seq, item.kv_head, 0, keys, s.k_rows.data());
  }
  const int64_t head0 = item.kv_head * group * c.head_dim;  // The group's first head's offset.
  auto scores = [&](int64_t i) { return s.scores.data() + i * group * keys; };
  for (int64_t j0 = 0; j0 < keys; j0 += kTileKeys) {
    for (int64_t i = 0; i < tokens; ++i) {
      const int64_t n = std::min(keys_of(i) - j0, kTileKeys);
      if (n <= 0) continue;
      const float* q = p.q + (item.begin + i) * p.q_stride + head0;
      if (panels != nullptr) {
        simd::DotPanels(q, group, panels + j0 * c.head_dim, n, c.head_dim, p.scale,
                        scores(i) + j0, keys);
      } else {
        simd::DotRows(q, group, s.k_rows.data() + j0, n, c.head_dim, p.scale, scores(i) + j0,
                      keys);
      }
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

// The key panels of every sequence with kPanelTokens query tokens or more, transposed tile by
// tile on the pool's threads. `panels` keeps its memory from call to call.
template <typename T>
void TransposeKeys(const PagedAttentionParams& p, const T* k_pool, ThreadPool* pool,
                   Panels& panels) {
  const PagedKvLayer& c = p.cache;
  const int64_t seqs = p.batch.num_seqs;
  panels.offset.assign(seqs, -1);
  panels.head_floats.assign(seqs, 0);
  if (!simd::PanelsServe(c.head_dim)) return;
  struct Tile {
    int64_t seq, kv_head, j0;
  };
  std::vector<Tile> tiles;
  int64_t floats = 0;
  for (int64_t seq = 0; seq < seqs; ++seq) {
    if (p.batch.q_start[seq + 1] - p.batch.q_start[seq] < kPanelTokens) continue;
    const int64_t keys = p.batch.kv_len[seq];
    panels.offset[seq] = floats;
    panels.head_floats[seq] = simd::PanelFloats(keys, c.head_dim);
    floats += c.num_kv_heads * panels.head_floats[seq];
    for (int64_t h = 0; h < c.num_kv_heads; ++h) {
      for (int64_t j0 = 0; j0 < keys; j0 += kTileKeys) tiles.push_back({seq, h, j0});
    }
  }
  if (tiles.empty()) return;
  if (static_cast<int64_t>(panels.floats.size()) < floats) panels.floats.resize(floats);
  auto run = [&](int64_t begin, int64_t end) {
    const T* rows[kTileKeys];
    for (int64_t i = begin; i < end; ++i) {
      const Tile& t = tiles[i];
      const int64_t n = std::min(kTileKeys, p.batch.kv_len[t.seq] - t.j0);
      FindRows(p, k_pool, t.seq, t.kv_head, t.j0, t.j0 + n, rows);
      simd::TransposeKeys(rows, n, c.head_dim, panels.Of(t.seq, t.kv_head) + t.j0 * c.head_dim);
    }
  };
  if (pool == nullptr) {
    run(0, static_cast<int64_t>(tiles.size()));
  } else {
    pool->ParallelFor(static_cast<int64_t>(tiles.size()), 1, run);
  }
}

template <typename T>
void Attend(const PagedAttentionParams& p, const T* k_pool, const T* v_pool, ThreadPool* pool) {
  // The calling thread's, kept: a long prompt's layers each need the same memory again. (Named
  // by a reference, which the pool's threads then share: a thread_local's name would give each
  // thread its own.)
  thread_local Panels kept;
  Panels& panels = kept;
  TransposeKeys(p, k_pool, pool, panels);
  const std::vector<Item> items = Items(p);
  auto run = [&](int64_t begin, int64_t end) {
    Scratch<T> scratch;
    for (int64_t i = begin; i < end; ++i) {
      const Item& item = items[i];
      AttendBlock(p, k_pool, v_pool, panels.Of(item.seq, item.kv_head), item, scratch);
    }
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
