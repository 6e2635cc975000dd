// One unit of the CPU attention (paged_attention_plan.h): a few query rows against one or more
// consecutive kv heads, their keys read tile by tile. The passes: scores (DotPanels from the
// unit's panels where it has them, else DotRows), each row's softmax numerators, the weighted
// sums of V, then each row's output copied out. Every score and sum takes the same operations in
// the same order as for a row alone (the helpers are independent of how the keys are split and
// which queries share a call, and the keys come in order), so a row's output does not depend on
// the rows or heads beside it. T is the pools' element type (float, or uint16_t for bf16).
#ifndef ARBOR_KERNELS_ATTENTION_UNIT_H_
#define ARBOR_KERNELS_ATTENTION_UNIT_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_simd.h"
#include "kernels/key_panels.h"
#include "kernels/paged_attention.h"
#include "kernels/paged_attention_plan.h"

namespace arbor::kernels {

// The scratch of one thread's units, reused between them. Row i's query head q (of the unit's
// heads·group) is (i·heads·group + q) in scores (·keys), inverse_sums, sums and queries
// (·head_dim).
template <typename T>
struct UnitScratch {
  std::vector<float> scores;  // Softmax numerators in the end; keys: the unit's most.
  std::vector<float> inverse_sums;
  std::vector<float> sums;
  std::vector<float> queries;            // With panels: the rows' queries side by side.
  std::vector<const T*> k_rows, v_rows;  // Kv head h's table keys from h·table.
  std::vector<const T*> own;             // A row's keys past them.
  std::vector<int64_t> keys;             // [i]: row i's keys.
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

// A unit as its passes read it; h below counts the unit's kv heads from 0.
template <typename T>
struct UnitView {
  UnitView(const PagedAttentionParams& params, const AttentionPlan& plan,
           const AttentionUnit& attention_unit, UnitScratch<T>& scratch)
      : p(params),
        unit(attention_unit),
        rows(plan.rows.data() + unit.rows_begin),
        count(unit.rows_end - unit.rows_begin),
        group(p.num_heads / p.cache.num_kv_heads),
        heads(unit.kv_heads),
        dim(p.cache.head_dim),
        table(unit.table_keys),
        s(scratch) {
    s.keys.resize(count);
    for (int64_t i = 0; i < count; ++i) {
      s.keys[i] = PagedPosition(p.batch, rows[i].seq, rows[i].token) + 1;
      keys = std::max(keys, s.keys[i]);
    }
  }

  // Row i's keys in the table's tile from key j0 (≤ 0: none).
  int64_t InTile(int64_t i, int64_t j0) const {
    return std::min({s.keys[i], table, j0 + kTileKeys}) - j0;
  }
  bool EndsIn(int64_t i, int64_t j0) const { return j0 + InTile(i, j0) == s.keys[i]; }
  // Whether row i + 1 takes the same keys as row i in the tile from key j0 and both rows' heads
  // fit in one call of at most `most` queries.
  bool PairsWithNext(int64_t i, int64_t j0, int most) const {
    return 2 * group <= most && i + 1 < count && InTile(i + 1, j0) == InTile(i, j0);
  }
  // Row i's first query head of kv head h, in s.scores, s.sums, p.q; and its output.
  int64_t Head(int64_t i, int64_t h) const { return (i * heads + h) * group; }
  float* Scores(int64_t i, int64_t h) const { return s.scores.data() + Head(i, h) * keys; }
  float* Sums(int64_t i, int64_t h) const { return s.sums.data() + Head(i, h) * dim; }
  const float* Query(int64_t i, int64_t h) const {
    return p.q + rows[i].token * p.q_stride + (unit.kv_head + h) * group * dim;
  }
  float* Out(int64_t i) const {
    return p.out + rows[i].token * p.out_stride + unit.kv_head * group * dim;
  }
  // Row i's keys of kv head h past the table's, from its own table.
  const T* const* OwnRows(int64_t i, int64_t h, const T* pool) const {
    s.own.resize(s.keys[i] - table);
    FindRows(p, pool, rows[i].seq, unit.kv_head + h, table, s.keys[i], s.own.data());
    return s.own.data();
  }

  const PagedAttentionParams& p;
  const AttentionUnit& unit;
  const AttentionRow* rows;
  const int64_t count, group, heads, dim, table;
  int64_t keys = 0;  // The most of any row.
  UnitScratch<T>& s;
};

// Sizes the scratch's per-query buffers (scores, softmax sums, weighted sums) for u's rows.
template <typename T>
void SizeQueryBuffers(const UnitView<T>& u) {
  const int64_t query_heads = u.count * u.heads * u.group;
  u.s.scores.resize(query_heads * u.keys);
  u.s.inverse_sums.resize(query_heads);
  u.s.sums.resize(query_heads * u.dim);
}

// Each row's weighted sums, all its query heads, copied to its output.
template <typename T>
void CopyOut(const UnitView<T>& u) {
  for (int64_t i = 0; i < u.count; ++i) {
    std::copy(u.Sums(i, 0), u.Sums(i, 0) + u.heads * u.group * u.dim, u.Out(i));
  }
}

// The scores over the table's keys, tile by tile and in each tile kv head by kv head, so that a
// tile's rows of all the unit's heads (consecutive in a block) are read together. With panels
// (one kv head) two rows' heads go in one DotPanels call where they fit (kPanelPassQueries).
template <typename T>
void ScoreTable(const UnitView<T>& u, const float* panels) {
  if (panels != nullptr) {
    u.s.queries.resize(u.count * u.group * u.dim);
    for (int64_t i = 0; i < u.count; ++i) {
      std::copy(u.Query(i, 0), u.Query(i, 0) + u.group * u.dim,
                u.s.queries.data() + u.Head(i, 0) * u.dim);
    }
  }
  for (int64_t j0 = 0; j0 < u.table; j0 += kTileKeys) {
    for (int64_t h = 0; h < u.heads; ++h) {
      for (int64_t i = 0, pass; i < u.count; i += pass) {
        const int64_t n = u.InTile(i, j0);
        pass = panels != nullptr && u.PairsWithNext(i, j0, simd::kPanelPassQueries) ? 2 : 1;
        if (n <= 0) continue;
        if (panels != nullptr) {
          simd::DotPanels(u.s.queries.data() + u.Head(i, 0) * u.dim, pass * u.group,
                          panels + j0 * u.dim, n, u.dim, u.p.scale, u.Scores(i, 0) + j0, u.keys);
        } else {
          simd::DotRows(u.Query(i, h), u.group, u.s.k_rows.data() + h * u.table + j0, n, u.dim,
                        u.p.scale, u.Scores(i, h) + j0, u.keys);
        }
      }
    }
  }
}

// For each row and its query heads [q_begin, q_end) of the unit's: the scores copied to
// p.last_scores where asked for, then turned into exp(score − max) in place, with 1 / their sum
// in s.inverse_sums.
template <typename T>
void Exponentiate(const UnitView<T>& u, int64_t q_begin, int64_t q_end) {
  const PagedAttentionParams& p = u.p;
  const int64_t first = u.unit.kv_head * u.group;
  for (int64_t i = 0; i < u.count; ++i) {
    const int64_t n = u.s.keys[i], seq = u.rows[i].seq;
    // The sequence's last query token's scores, where asked for.
    float* last_scores = u.rows[i].token == p.batch.q_start[seq + 1] - 1 && p.last_scores != nullptr
                             ? p.last_scores[seq]
                             : nullptr;
    for (int64_t q = q_begin; q < q_end; ++q) {
      float* row = u.Scores(i, 0) + q * u.keys;
      if (last_scores != nullptr) std::copy(row, row + n, last_scores + (first + q) * n);
      u.s.inverse_sums[u.Head(i, 0) + q] = 1.0f / simd::ExpShifted(row, n, simd::Max(row, n));
    }
  }
}

// The weighted sums of V over the table's keys into s.sums, tile by tile and kv head by kv head.
// With one kv head two rows' heads go in one call (kSumQueries) where both take the same keys in
// a tile and both end there or neither does (so one scale and one resume serve both).
template <typename T>
void SumTable(const UnitView<T>& u) {
  for (int64_t j0 = 0; j0 < u.table; j0 += kTileKeys) {
    for (int64_t h = 0; h < u.heads; ++h) {
      for (int64_t i = 0, pass; i < u.count; i += pass) {
        const int64_t n = u.InTile(i, j0);
        pass = u.heads == 1 && u.PairsWithNext(i, j0, simd::kSumQueries) &&
                       u.EndsIn(i + 1, j0) == u.EndsIn(i, j0)
                   ? 2
                   : 1;
        if (n <= 0) continue;
        simd::WeightedRowSum(u.Scores(i, h) + j0, u.keys, pass * u.group,
                             u.s.v_rows.data() + h * u.table + j0, n, u.dim,
                             u.EndsIn(i, j0) ? u.s.inverse_sums.data() + u.Head(i, h) : nullptr,
                             u.Sums(i, h), u.dim, /*resume=*/j0 > 0);
      }
    }
  }
}

// All query heads of one unit's kv heads for its rows: the passes above, each row's own keys
// past the table after the table's, then the rows' outputs copied out. With panels (one kv head)
// `values` holds that head's value rows of the table's keys side by side.
template <typename T>
void AttendUnit(const PagedAttentionParams& p, const T* k_pool, const T* v_pool,
                const AttentionPlan& plan, const AttentionUnit& unit, const float* panels,
                const T* values, UnitScratch<T>& s) {
  const UnitView<T> u(p, plan, unit, s);
  SizeQueryBuffers(u);
  s.v_rows.resize(u.heads * u.table);
  if (panels == nullptr) s.k_rows.resize(u.heads * u.table);
  for (int64_t h = 0; h < u.heads; ++h) {
    const int64_t seq = u.rows[0].seq, kv_head = unit.kv_head + h;
    if (values != nullptr) {
      for (int64_t j = 0; j < u.table; ++j) s.v_rows[h * u.table + j] = values + j * u.dim;
    } else {
      FindRows(p, v_pool, seq, kv_head, 0, u.table, s.v_rows.data() + h * u.table);
    }
    if (panels == nullptr)
      FindRows(p, k_pool, seq, kv_head, 0, u.table, s.k_rows.data() + h * u.table);
  }
  ScoreTable(u, panels);
  for (int64_t i = 0; i < u.count; ++i) {
    for (int64_t h = 0; h < u.heads && s.keys[i] > u.table; ++h) {
      simd::DotRows(u.Query(i, h), u.group, u.OwnRows(i, h, k_pool), s.keys[i] - u.table, u.dim,
                    p.scale, u.Scores(i, h) + u.table, u.keys);
    }
  }
  Exponentiate(u, 0, u.heads * u.group);
  SumTable(u);
  for (int64_t i = 0; i < u.count; ++i) {
    for (int64_t h = 0; h < u.heads && s.keys[i] > u.table; ++h) {
      simd::WeightedRowSum(u.Scores(i, h) + u.table, u.keys, u.group, u.OwnRows(i, h, v_pool),
                           s.keys[i] - u.table, u.dim, s.inverse_sums.data() + u.Head(i, h),
                           u.Sums(i, h), u.dim, /*resume=*/u.table > 0);
    }
  }
  CopyOut(u);
}

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_ATTENTION_UNIT_H_
