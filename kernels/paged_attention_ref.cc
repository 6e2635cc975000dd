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

// The scratch a thread keeps between calls: beyond 16 MB (a prompt of 8,192 tokens at 8 kv heads
// of 64) given back, not held resident for the worker's life: such a prompt's layers allocate it
// again, a small cost beside its attention.
constexpr int64_t kKeptFloats = int64_t{4} << 20;

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
  thread_local Panels kept;
  Panels& panels = kept;
  TransposeKeys(p, k_pool, plan, pool, panels);
  auto run = [&](int64_t begin, int64_t end) {
    UnitScratch<T> scratch;
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
