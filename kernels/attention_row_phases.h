// The CPU attention of a step whose query rows are one row set of the plan (a lone decode row,
// an interactive batch-1 step; or the decode rows of sibling traces whose tables begin with the
// same blocks, too few for key panels) spread over the pool's threads in three phases. The plan's
// units would split that set's kv heads between the threads (kv heads / threads each, or one
// each where the heads are few): three kv heads leave one of two threads idle a third of the
// time, and a unit of one kv head reads only its part of every key's row of a block. By phases:
//   1. the scores, tile by tile of the shared keys (each tile's rows of all kv heads together),
//      and each row's own keys past them;
//   2. each query head's softmax;
//   3. the weighted sums of V, by kv head and slice of head_dim.
// Every score, softmax and sum takes AttendUnit's operations in the same order (a score depends on
// its key alone, a softmax on its head's scores, each output value adds its keys in key order
// whatever the slice: simd::WeightedRowSum), so each row's output is the same bits as on the
// unit path, and as beside any other rows.
#ifndef ARBOR_KERNELS_ATTENTION_ROW_PHASES_H_
#define ARBOR_KERNELS_ATTENTION_ROW_PHASES_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/attention_unit.h"
#include "kernels/cpu/cpu_simd.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/paged_attention.h"
#include "kernels/paged_attention_plan.h"

namespace arbor::kernels {

// From this many shared keys a row set goes by phases: at 256 and fewer, the three hand-offs
// between the threads cost as much as the idle thread.
inline constexpr int64_t kPhasesFromKeys = 512;

// Whether `plan` is one row set without key panels, whose shared keys are enough to go by
// phases on `threads` threads.
inline bool GoesByPhases(const AttentionPlan& plan, int64_t threads) {
  if (threads <= 1 || !plan.panel_sets.empty() || plan.units.empty()) return false;
  for (const AttentionUnit& unit : plan.units) {
    if (unit.rows_begin != plan.units[0].rows_begin) return false;
  }
  return plan.units[0].table_keys >= kPhasesFromKeys;
}

// Phase 1: the scores of every row of `u` (all kv heads), the shared keys' tiles and then each
// row's own keys dealt out as items.
template <typename T>
void ScoreInPhases(const UnitView<T>& u, const T* k_pool, ThreadPool& pool) {
  const PagedAttentionParams& p = u.p;
  const int64_t tiles = (u.table + kTileKeys - 1) / kTileKeys;
  pool.ParallelFor(tiles + u.count, 1, [&](int64_t begin, int64_t end) {
    const T* rows[kTileKeys];
    std::vector<const T*> own;
    for (int64_t w = begin; w < end; ++w) {
      if (w >= tiles) {  // Row i's keys past the shared ones, from its own table.
        const int64_t i = w - tiles, n = u.s.keys[i] - u.table;
        if (n <= 0) continue;
        own.resize(n);
        for (int64_t h = 0; h < u.heads; ++h) {
          FindRows(p, k_pool, u.rows[i].seq, h, u.table, u.s.keys[i], own.data());
          simd::DotRows(u.Query(i, h), u.group, own.data(), n, u.dim, p.scale,
                        u.Scores(i, h) + u.table, u.keys);
        }
        continue;
      }
      const int64_t j0 = w * kTileKeys;
      for (int64_t h = 0; h < u.heads; ++h) {
        FindRows(p, k_pool, u.rows[0].seq, h, j0, std::min(u.table, j0 + kTileKeys), rows);
        for (int64_t i = 0; i < u.count; ++i) {
          const int64_t n = u.InTile(i, j0);
          if (n <= 0) continue;
          simd::DotRows(u.Query(i, h), u.group, rows, n, u.dim, p.scale, u.Scores(i, h) + j0,
                        u.keys);
        }
      }
    }
  });
}

// Phase 3: every row's weighted sums of V, by kv head and slice of 32 floats (whole vectors for
// every instruction set's sums): the shared keys tile by tile, then the row's own.
template <typename T>
void SumInPhases(const UnitView<T>& u, const T* v_pool, ThreadPool& pool) {
  const PagedAttentionParams& p = u.p;
  const int64_t slice = u.dim % 32 == 0 ? 32 : u.dim, slices = u.dim / slice;
  const float* inverse_sums = u.s.inverse_sums.data();
  pool.ParallelFor(u.heads * slices, 1, [&](int64_t begin, int64_t end) {
    const T* rows[kTileKeys];
    std::vector<const T*> own;
    for (int64_t w = begin; w < end; ++w) {
      const int64_t h = w / slices, d0 = w % slices * slice;
      const T* from_d0 = v_pool + d0;  // Each row found from d0 on: the slice's values.
      for (int64_t j0 = 0; j0 < u.table; j0 += kTileKeys) {
        FindRows(p, from_d0, u.rows[0].seq, h, j0, std::min(u.table, j0 + kTileKeys), rows);
        for (int64_t i = 0; i < u.count; ++i) {
          const int64_t n = u.InTile(i, j0);
          if (n <= 0) continue;
          simd::WeightedRowSum(u.Scores(i, h) + j0, u.keys, u.group, rows, n, slice,
                               u.EndsIn(i, j0) ? inverse_sums + u.Head(i, h) : nullptr,
                               u.Sums(i, h) + d0, u.dim, /*resume=*/j0 > 0);
        }
      }
      for (int64_t i = 0; i < u.count; ++i) {
        const int64_t n = u.s.keys[i] - u.table;
        if (n <= 0) continue;
        own.resize(n);
        FindRows(p, from_d0, u.rows[i].seq, h, u.table, u.s.keys[i], own.data());
        simd::WeightedRowSum(u.Scores(i, h) + u.table, u.keys, u.group, own.data(), n, slice,
                             inverse_sums + u.Head(i, h), u.Sums(i, h) + d0, u.dim,
                             /*resume=*/u.table > 0);
      }
    }
  });
}

// The row set of `plan` (GoesByPhases) on `pool`, its scratch `s` shared by the phases.
template <typename T>
void AttendRowSetInPhases(const PagedAttentionParams& p, const T* k_pool, const T* v_pool,
                          const AttentionPlan& plan, ThreadPool& pool, UnitScratch<T>& s) {
  AttentionUnit unit = plan.units[0];
  unit.kv_head = 0;
  unit.kv_heads = p.cache.num_kv_heads;
  const UnitView<T> u(p, plan, unit, s);
  SizeQueryBuffers(u);
  ScoreInPhases(u, k_pool, pool);
  pool.ParallelFor(u.heads * u.group, 1,
                   [&](int64_t begin, int64_t end) { Exponentiate(u, begin, end); });
  SumInPhases(u, v_pool, pool);
  CopyOut(u);
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_ATTENTION_ROW_PHASES_H_
