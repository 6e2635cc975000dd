#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_simd.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/key_panels.h"
#include "kernels/paged_attention.h"
#include "kernels/paged_attention_plan.h"

namespace arbor::kernels {
namespace {

static_assert(kTileKeys % simd::kPanelKeys == 0, "tiles start on a panel");

// The scratch of one thread's units, reused between them.
template <typename T>
struct Scratch {
  std::vector<float> scores;        // Row i's head g at (i·group + g)·keys, keys the unit's most.
  std::vector<float> inverse_sums;  // [i·group + g].
  std::vector<float> sums;          // Row i's head g's weighted sum at (i·group + g)·head_dim.
  std::vector<float> queries;       // Row i's head g's query at (i·group + g)·head_dim.
  std::vector<const T*> k_rows, v_rows;  // The unit's table keys.
  std::vector<const T*> own;             // A row's keys past them.
  std::vector<int64_t> keys;             // [i]: row i's keys.
};

// The plan's panel sets, set s's kv head h at floats + offset[s] + h·head_floats[s].
struct Panels {
  std::unique_ptr<float[]> floats;  // Uninitialised: TransposeKeys writes every float it uses.
  int64_t capacity = 0;
  std::vector<int64_t> offset;
  std::vector<int64_t> head_floats;

  // Room for n floats, the memory kept from call to call.
  void Reserve(int64_t n) {
    if (n <= capacity) return;
    floats = std::make_unique_for_overwrite<float[]>(n);
    capacity = n;
  }
  float* Of(int64_t set, int64_t kv_head) {
    return set < 0 ? nullptr : floats.get() + offset[set] + kv_head * head_floats[set];
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

// Between AttendUnit's two passes, for each of its `count` rows and each head g of the group:
// the row's scores (s.scores from (i·group + g)·keys) copied to p.last_scores where asked for,
// then turned into exp(score − max) in place, with 1 / their sum in s.inverse_sums[i·group + g].
// Out of AttendUnit only to keep it short; inline, so the tile loops around it are unchanged.
template <typename T>
inline void Exponentiate(const PagedAttentionParams& p, const AttentionRow* rows, int64_t count,
                         int64_t group, int64_t keys, int64_t kv_head, Scratch<T>& s) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t n = s.keys[i], seq = rows[i].seq;
    // The sequence's last query token's scores, where asked for.
    float* last_scores = rows[i].token == p.batch.q_start[seq + 1] - 1 && p.last_scores != nullptr
                             ? p.last_scores[seq]
                             : nullptr;
    for (int64_t g = 0; g < group; ++g) {
      float* row = s.scores.data() + i * group * keys + g * keys;
      if (last_scores != nullptr) {
        std::copy(row, row + n, last_scores + (kv_head * group + g) * n);
      }
      s.inverse_sums[i * group + g] = 1.0f / simd::ExpShifted(row, n, simd::Max(row, n));
    }
  }
}

// Row i's keys (keys[i] in all) in the tile of the table's first `table` keys from key j0
// (≤ 0: none).
inline int64_t InTile(const std::vector<int64_t>& keys, int64_t i, int64_t table, int64_t j0) {
  return std::min({keys[i], table, j0 + kTileKeys}) - j0;
}

// AttendUnit's weighted sums over the table's keys, tile by tile, from the numerators in s.scores
// (row i's head g at (i·group + g)·keys) into s.sums (at (i·group + g)·head_dim), side by side so
// that two rows' heads can be one call's queries (simd::kSumQueries): where both take the same
// keys in a tile and both end there or neither does (so one scale and one resume serve both).
template <typename T>
void SumTable(int64_t count, int64_t group, int64_t keys, int64_t table, int64_t head_dim,
              Scratch<T>& s) {
  auto ends_in = [&](int64_t i, int64_t j0) {
    return j0 + InTile(s.keys, i, table, j0) == s.keys[i];
  };
  for (int64_t j0 = 0; j0 < table; j0 += kTileKeys) {
    for (int64_t i = 0, pass; i < count; i += pass) {
      const int64_t n = InTile(s.keys, i, table, j0);
      pass = 2 * group <= simd::kSumQueries && i + 1 < count &&
                     InTile(s.keys, i + 1, table, j0) == n && ends_in(i + 1, j0) == ends_in(i, j0)
                 ? 2
                 : 1;
      if (n <= 0) continue;
      simd::WeightedRowSum(s.scores.data() + i * group * keys + j0, keys, pass * group,
                           s.v_rows.data() + j0, n, head_dim,
                           ends_in(i, j0) ? s.inverse_sums.data() + i * group : nullptr,
                           s.sums.data() + i * group * head_dim, head_dim, /*resume=*/j0 > 0);
    }
  }
}

// All query heads of one unit's kv head for its rows (paged_attention_plan.h): the keys through
// the unit's table tile by tile, each tile read once for all its rows, a row's heads per pass or
// two rows' where they fit (simd::DotPanels from `panels` where the unit has them, with the rows'
// queries side by side, else simd::DotRows; simd::WeightedRowSum, resumed tile to tile, in
// SumTable), then each row's own later keys. Every score and
// weighted sum takes the same operations in the same order as for a row alone (the helpers are
// independent of how the keys are split and which queries share a call, and the keys come in
// order), so a row's output does not depend on the rows beside it. T is the pools' element type
// (float, or uint16_t for bf16).
template <typename T>
void AttendUnit(const PagedAttentionParams& p, const T* k_pool, const T* v_pool,
                const AttentionPlan& plan, const AttentionUnit& unit, const float* panels,
                Scratch<T>& s) {
  const PagedKvLayer& c = p.cache;
  const int64_t group = p.num_heads / c.num_kv_heads;
  const AttentionRow* rows = plan.rows.data() + unit.rows_begin;
  const int64_t count = unit.rows_end - unit.rows_begin;
  s.keys.resize(count);
  int64_t keys = 0;  // The most of any row.
  for (int64_t i = 0; i < count; ++i) {
    s.keys[i] = PagedPosition(p.batch, rows[i].seq, rows[i].token) + 1;
    keys = std::max(keys, s.keys[i]);
  }
  auto keys_of = [&](int64_t i) { return s.keys[i]; };
  const int64_t table = unit.table_keys;
  auto in_tile = [&](int64_t i, int64_t j0) { return InTile(s.keys, i, table, j0); };
  s.scores.resize(count * group * keys);
  s.inverse_sums.resize(count * group);
  s.v_rows.resize(table);
  FindRows(p, v_pool, rows[0].seq, unit.kv_head, 0, table, s.v_rows.data());
  if (panels == nullptr) {
    s.k_rows.resize(table);
    FindRows(p, k_pool, rows[0].seq, unit.kv_head, 0, table, s.k_rows.data());
  }
  const int64_t head0 = unit.kv_head * group * c.head_dim;  // The group's first head's offset.
  auto scores = [&](int64_t i) { return s.scores.data() + i * group * keys; };
  auto query = [&](int64_t i) { return p.q + rows[i].token * p.q_stride + head0; };
  auto out = [&](int64_t i) { return p.out + rows[i].token * p.out_stride + head0; };
  // Row i's keys past the table's, from its own table.
  auto own_rows = [&](int64_t i, const T* pool) {
    s.own.resize(keys_of(i) - table);
    FindRows(p, pool, rows[i].seq, unit.kv_head, table, keys_of(i), s.own.data());
    return s.own.data();
  };
  if (panels != nullptr) {
    // The rows' queries side by side, so that two rows' heads are one call's queries.
    s.queries.resize(count * group * c.head_dim);
    for (int64_t i = 0; i < count; ++i) {
      std::copy(query(i), query(i) + group * c.head_dim, s.queries.data() + i * group * c.head_dim);
    }
  }
  for (int64_t j0 = 0; j0 < table; j0 += kTileKeys) {
    for (int64_t i = 0, pass; i < count; i += pass) {
      const int64_t n = in_tile(i, j0);
      pass = panels != nullptr && 2 * group <= simd::kPanelQueries && i + 1 < count &&
                     in_tile(i + 1, j0) == n
                 ? 2
                 : 1;
      if (n <= 0) continue;
      if (panels != nullptr) {
        simd::DotPanels(s.queries.data() + i * group * c.head_dim, pass * group,
                        panels + j0 * c.head_dim, n, c.head_dim, p.scale, scores(i) + j0, keys);
      } else {
        simd::DotRows(query(i), group, s.k_rows.data() + j0, n, c.head_dim, p.scale, scores(i) + j0,
                      keys);
      }
    }
  }
  for (int64_t i = 0; i < count; ++i) {
    if (keys_of(i) <= table) continue;
    simd::DotRows(query(i), group, own_rows(i, k_pool), keys_of(i) - table, c.head_dim, p.scale,
                  scores(i) + table, keys);
  }
  Exponentiate(p, rows, count, group, keys, unit.kv_head, s);
  s.sums.resize(count * group * c.head_dim);
  SumTable(count, group, keys, table, c.head_dim, s);
  auto sums = [&](int64_t i) { return s.sums.data() + i * group * c.head_dim; };
  for (int64_t i = 0; i < count; ++i) {
    if (keys_of(i) > table) {
      simd::WeightedRowSum(scores(i) + table, keys, group, own_rows(i, v_pool), keys_of(i) - table,
                           c.head_dim, s.inverse_sums.data() + i * group, sums(i), c.head_dim,
                           /*resume=*/table > 0);
    }
    std::copy(sums(i), sums(i) + group * c.head_dim, out(i));
  }
}

// The plan's key panels, transposed tile by tile on the pool's threads. `panels` keeps its memory
// from call to call.
template <typename T>
void TransposeKeys(const PagedAttentionParams& p, const T* k_pool, const AttentionPlan& plan,
                   ThreadPool* pool, Panels& panels) {
  const PagedKvLayer& c = p.cache;
  struct Tile {
    int64_t set, kv_head, j0;
  };
  std::vector<Tile> tiles;
  int64_t floats = 0;
  panels.offset.clear();
  panels.head_floats.clear();
  for (int64_t set = 0; set < static_cast<int64_t>(plan.panel_sets.size()); ++set) {
    const int64_t keys = plan.panel_sets[set].keys;
    panels.offset.push_back(floats);
    panels.head_floats.push_back(simd::PanelFloats(keys, c.head_dim));
    floats += c.num_kv_heads * panels.head_floats.back();
    for (int64_t h = 0; h < c.num_kv_heads; ++h) {
      for (int64_t j0 = 0; j0 < keys; j0 += kTileKeys) tiles.push_back({set, h, j0});
    }
  }
  if (tiles.empty()) return;
  panels.Reserve(floats);
  auto run = [&](int64_t begin, int64_t end) {
    const T* rows[kTileKeys];
    for (int64_t i = begin; i < end; ++i) {
      const Tile& t = tiles[i];
      const PanelSet& set = plan.panel_sets[t.set];
      const int64_t n = std::min(kTileKeys, set.keys - t.j0);
      FindRows(p, k_pool, set.seq, t.kv_head, t.j0, t.j0 + n, rows);
      simd::TransposeKeys(rows, n, c.head_dim, panels.Of(t.set, t.kv_head) + t.j0 * c.head_dim);
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
  const PagedKvLayer& c = p.cache;
  const AttentionPlan plan = PlanAttention(p.batch, c.num_kv_heads, p.num_heads / c.num_kv_heads,
                                           c.block_size, simd::PanelsServe(c.head_dim));
  // The calling thread's, kept: a long prompt's layers each need the same memory again. (Named
  // by a reference, which the pool's threads then share: a thread_local's name would give each
  // thread its own.)
  thread_local Panels kept;
  Panels& panels = kept;
  TransposeKeys(p, k_pool, plan, pool, panels);
  auto run = [&](int64_t begin, int64_t end) {
    Scratch<T> scratch;
    for (int64_t u = begin; u < end; ++u) {
      const AttentionUnit& unit = plan.units[u];
      AttendUnit(p, k_pool, v_pool, plan, unit, panels.Of(unit.panel_set, unit.kv_head), scratch);
    }
  };
  if (pool == nullptr) {
    run(0, static_cast<int64_t>(plan.units.size()));
  } else {
    pool->ParallelFor(static_cast<int64_t>(plan.units.size()), 1, run);
  }
  // Beyond 16 MB (a prompt of 8,192 tokens at 8 kv heads of 64) given back, not held resident
  // for the worker's life: such a prompt's layers allocate them again, a small cost beside its
  // attention.
  constexpr int64_t kKeptFloats = int64_t{4} << 20;
  if (panels.capacity > kKeptFloats) panels = Panels();
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
