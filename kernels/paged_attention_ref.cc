#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/attention_row_phases.h"
#include "kernels/attention_unit.h"
#include "kernels/cpu/cpu_simd.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/key_panels.h"
#include "kernels/paged_attention.h"
#include "kernels/paged_attention_plan.h"

namespace arbor::kernels {
namespace {

static_assert(kTileKeys % simd::kPanelKeys == 0, "tiles start on a panel");

// The scratch a thread keeps between calls: a buffer beyond 4 Mi elements (16 MB of floats: a
// prompt of 8,192 tokens at 8 kv heads of 64) given back, not held resident for the worker's life:
// such a prompt's layers allocate it again, a small cost beside its attention.
constexpr int64_t kKeptFloats = int64_t{4} << 20;

// Memory kept from call to call for n elements of E, uninitialised (its writer sets every element
// it uses).
template <typename E>
struct KeptBuffer {
  std::unique_ptr<E[]> data;
  int64_t capacity = 0;

  void Reserve(int64_t n) {
    if (n <= capacity) return;
    data = std::make_unique_for_overwrite<E[]>(n);
    capacity = n;
  }
};

// The plan's panel sets: set s's kv head h's key panels at floats + offset[s] + h·head_floats[s],
// and its value rows side by side at values + value_offset[s] + h·head_values[s].
// A block holds every kv head's rows of a key together, so one head's rows of consecutive keys
// sit a row of all heads apart (2 KiB at 8 kv heads of 64 floats) and a tile of them shares a few
// L1 sets; packed once, the weighted sums of every unit of a head read them in order (the 1B
// shape's prefill attention 1.03–1.05× with f32 KV, 1.08–1.11× with bf16).
template <typename T>
struct Panels {
  KeptBuffer<float> floats;
  KeptBuffer<T> values;
  std::vector<int64_t> offset;
  std::vector<int64_t> head_floats;
  std::vector<int64_t> value_offset;
  std::vector<int64_t> head_values;

  float* Of(int64_t set, int64_t kv_head) {
    return set < 0 ? nullptr : floats.data.get() + offset[set] + kv_head * head_floats[set];
  }
  T* ValuesOf(int64_t set, int64_t kv_head) {
    return set < 0 ? nullptr : values.data.get() + value_offset[set] + kv_head * head_values[set];
  }
  bool OverKept() const { return floats.capacity > kKeptFloats || values.capacity > kKeptFloats; }
};

// The plan's key panels, transposed tile by tile on the pool's threads, and its value rows packed
// by kv head. `panels` keeps its memory from call to call.
template <typename T>
void PackKeysAndValues(const PagedAttentionParams& p, const T* k_pool, const T* v_pool,
                       const AttentionPlan& plan, ThreadPool* pool, Panels<T>& panels) {
  const PagedKvLayer& c = p.cache;
  struct Tile {
    int64_t set, kv_head, j0;
  };
  std::vector<Tile> tiles;
  int64_t floats = 0, values = 0;
  panels.offset.clear();
  panels.head_floats.clear();
  panels.value_offset.clear();
  panels.head_values.clear();
  for (int64_t set = 0; set < static_cast<int64_t>(plan.panel_sets.size()); ++set) {
    const int64_t keys = plan.panel_sets[set].keys;
    panels.offset.push_back(floats);
    panels.head_floats.push_back(simd::PanelFloats(keys, c.head_dim));
    floats += c.num_kv_heads * panels.head_floats.back();
    panels.value_offset.push_back(values);
    panels.head_values.push_back(keys * c.head_dim);
    values += c.num_kv_heads * panels.head_values.back();
    for (int64_t h = 0; h < c.num_kv_heads; ++h) {
      for (int64_t j0 = 0; j0 < keys; j0 += kTileKeys) tiles.push_back({set, h, j0});
    }
  }
  if (tiles.empty()) return;
  panels.floats.Reserve(floats);
  panels.values.Reserve(values);
  auto run = [&](int64_t begin, int64_t end) {
    const T* rows[kTileKeys];
    for (int64_t i = begin; i < end; ++i) {
      const Tile& t = tiles[i];
      const PanelSet& set = plan.panel_sets[t.set];
      const int64_t n = std::min(kTileKeys, set.keys - t.j0);
      FindRows(p, k_pool, set.seq, t.kv_head, t.j0, t.j0 + n, rows);
      simd::TransposeKeys(rows, n, c.head_dim, panels.Of(t.set, t.kv_head) + t.j0 * c.head_dim);
      FindRows(p, v_pool, set.seq, t.kv_head, t.j0, t.j0 + n, rows);
      T* packed = panels.ValuesOf(t.set, t.kv_head) + t.j0 * c.head_dim;
      for (int64_t j = 0; j < n; ++j) {
        std::copy(rows[j], rows[j] + c.head_dim, packed + j * c.head_dim);
      }
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
  const AttentionPlan plan =
      PlanAttention(p.batch, c.num_kv_heads, p.num_heads / c.num_kv_heads, c.block_size,
                    simd::PanelsServe(c.head_dim), pool == nullptr ? 1 : pool->num_threads());
  if (pool != nullptr && GoesByPhases(plan, pool->num_threads())) {
    // Kept and given back as the panels below are, for the same reasons (its scores are the
    // large part).
    thread_local UnitScratch<T> kept_scratch;
    UnitScratch<T>& scratch = kept_scratch;
    AttendRowSetInPhases(p, k_pool, v_pool, plan, *pool, scratch);
    if (static_cast<int64_t>(scratch.scores.capacity()) > kKeptFloats) scratch = UnitScratch<T>();
    return;
  }
  // The calling thread's, kept: a long prompt's layers each need the same memory again. (Named
  // by a reference, which the pool's threads then share: a thread_local's name would give each
  // thread its own.)
  thread_local Panels<T> kept;
  Panels<T>& panels = kept;
  PackKeysAndValues(p, k_pool, v_pool, plan, pool, panels);
  auto run = [&](int64_t begin, int64_t end) {
    UnitScratch<T> scratch;
    for (int64_t u = begin; u < end; ++u) {
      const AttentionUnit& unit = plan.units[u];
      AttendUnit(p, k_pool, v_pool, plan, unit, panels.Of(unit.panel_set, unit.kv_head),
                 panels.ValuesOf(unit.panel_set, unit.kv_head), scratch);
    }
  };
  if (pool == nullptr) {
    run(0, static_cast<int64_t>(plan.units.size()));
  } else {
    pool->ParallelFor(static_cast<int64_t>(plan.units.size()), 1, run);
  }
  if (panels.OverKept()) panels = Panels<T>();
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
