// The CPU attention of a step whose only query row is a decode token (an interactive batch-1
// step) spread over the pool's threads in three phases. The plan's units would split that row's
// kv heads between the threads (kv heads / threads each, or one each where the heads are few):
// three kv heads leave one of two threads idle a third of the time, and a unit of one kv head
// reads only its part of every key's row of a block. By phases instead:
//   1. the scores, tile by tile of keys, each tile's rows of all kv heads together;
//   2. each query head's softmax;
//   3. the weighted sums of V, by kv head and slice of head_dim.
// Every score, softmax and sum takes AttendUnit's operations in the same order (a score depends on
// its key alone, a softmax on its head's scores, each output value adds its keys in key order
// whatever the slice: simd::WeightedRowSum), so the row's output is the same bits as on the
// unit path, and as beside any other rows.
#ifndef ARBOR_KERNELS_ATTENTION_ROW_PHASES_H_
#define ARBOR_KERNELS_ATTENTION_ROW_PHASES_H_

#include <algorithm>
#include <cstdint>

#include "kernels/attention_unit.h"
#include "kernels/cpu/cpu_simd.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/paged_attention.h"
#include "kernels/paged_attention_plan.h"

namespace arbor::kernels {

// From this many keys a lone decode row goes by phases: at 256 and fewer, the three hand-offs
// between the threads cost as much as the idle thread.
inline constexpr int64_t kRowPhasesFromKeys = 512;

// Whether `plan` is one decode row whose keys all come through its own table (no panels, no
// shared prefix), long enough to go by phases on `threads` threads.
inline bool GoesByPhases(const AttentionPlan& plan, int64_t threads) {
  return threads > 1 && plan.rows.size() == 1 && plan.panel_sets.empty() && !plan.units.empty() &&
         plan.units[0].table_keys >= kRowPhasesFromKeys;
}

// The row of `plan` (GoesByPhases) on `pool`, its scratch `s` shared by the phases.
template <typename T>
void AttendRowInPhases(const PagedAttentionParams& p, const T* k_pool, const T* v_pool,
                       const AttentionPlan& plan, ThreadPool& pool, UnitScratch<T>& s) {
  AttentionUnit unit = plan.units[0];
  unit.kv_head = 0;
  unit.kv_heads = p.cache.num_kv_heads;
  const UnitView<T> u(p, plan, unit, s);
  const int64_t query_heads = u.heads * u.group, seq = u.rows[0].seq;
  s.scores.resize(query_heads * u.keys);
  s.inverse_sums.resize(query_heads);
  s.sums.resize(query_heads * u.dim);
  s.k_rows.resize(u.heads * u.table);
  const int64_t tiles = (u.table + kTileKeys - 1) / kTileKeys;
  pool.ParallelFor(tiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t j0 = begin * kTileKeys; j0 < end * kTileKeys; j0 += kTileKeys) {
      const int64_t n = u.InTile(0, j0);
      for (int64_t h = 0; h < u.heads; ++h) {
        const T** rows = s.k_rows.data() + h * u.table + j0;
        FindRows(p, k_pool, seq, h, j0, j0 + n, rows);
        simd::DotRows(u.Query(0, h), u.group, rows, n, u.dim, p.scale, u.Scores(0, h) + j0, u.keys);
      }
    }
  });
  pool.ParallelFor(query_heads, 1,
                   [&](int64_t begin, int64_t end) { Exponentiate(u, begin, end); });
  // Slices of 32 floats: whole vectors for every instruction set's sums.
  const int64_t slice = u.dim % 32 == 0 ? 32 : u.dim, slices = u.dim / slice;
  pool.ParallelFor(u.heads * slices, 1, [&](int64_t begin, int64_t end) {
    const T* rows[kTileKeys];
    for (int64_t w = begin; w < end; ++w) {
      const int64_t h = w / slices, d0 = w % slices * slice;
      for (int64_t j0 = 0; j0 < u.table; j0 += kTileKeys) {
        const int64_t n = u.InTile(0, j0);
        // The rows from d0 on: V's pool shifted by the slice's offset.
        FindRows(p, v_pool + d0, seq, h, j0, j0 + n, rows);
        simd::WeightedRowSum(u.Scores(0, h) + j0, u.keys, u.group, rows, n, slice,
                             u.EndsIn(0, j0) ? s.inverse_sums.data() + u.Head(0, h) : nullptr,
                             u.Sums(0, h) + d0, u.dim, /*resume=*/j0 > 0);
      }
    }
  });
  std::copy(u.Sums(0, 0), u.Sums(0, 0) + query_heads * u.dim, u.Out(0));
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_ATTENTION_ROW_PHASES_H_
