// How the CPU attention (paged_attention_ref.cc) splits a step into units of work, and which keys
// it transposes into panels (key_panels.h) first, their values packed beside them.
//
// A unit is a few query rows and one or more consecutive kv heads whose keys are read once for
// all of its rows, tile by tile, while they are in L1:
// - up to kBlockTokens consecutive query tokens of one sequence (a prompt or an extend chunk):
//   every key of every row through that sequence's block table;
// - up to kGroupRows decode rows of sibling sequences whose block tables begin with the same
//   blocks (the branches of a search): the keys of those shared blocks through the first row's
//   table, each row's own later keys through its own;
// - any other decode row alone.
// Which rows share a unit never changes a row's bits: the scores and sums take the same
// operations in the same order whatever the unit (see paged_attention_ref.cc). A plan of one row
// set without panels and with enough keys runs by phases over the threads instead of by its
// units (attention_row_phases.h), with the same bits.
#ifndef ARBOR_KERNELS_PAGED_ATTENTION_PLAN_H_
#define ARBOR_KERNELS_PAGED_ATTENTION_PLAN_H_

#include <cstdint>
#include <vector>

#include "kernels/paged_kv.h"

namespace arbor::kernels {

// Query tokens of one sequence per unit: its scores are held side by side (kBlockTokens · group
// · keys floats).
inline constexpr int64_t kBlockTokens = 16;
// Sibling decode rows per unit: small enough that a group of 16 siblings makes units for two
// threads per kv head, large enough that each key read serves kGroupRows · group queries.
inline constexpr int64_t kGroupRows = 8;
// Keys per tile: a tile's K (or V) rows stay in L1 while every row of the unit meets them.
inline constexpr int64_t kTileKeys = 64;

// One query row: token `token` of the step (an index into the batch's query tokens) of `seq`.
struct AttentionRow {
  int64_t token;
  int64_t seq;
};

// Keys [0, keys) of sequence `seq`, transposed into panels once per kv head (and their value rows
// packed per kv head).
struct PanelSet {
  int64_t seq;
  int64_t keys;
};

struct AttentionUnit {
  int64_t rows_begin;  // Its rows: plan.rows[rows_begin, rows_end).
  int64_t rows_end;
  // Keys [0, table_keys) come through the first row's sequence's block table (each row taking
  // those below its own count); a row's keys from table_keys on through its own table.
  int64_t table_keys;
  int64_t panel_set;  // Into plan.panel_sets, covering [0, table_keys); −1: none.
  int64_t kv_head;    // The first of its kv heads.
  int64_t kv_heads;   // One with panels; without, as many as the threads leave to each.
  int64_t cost;       // Query-key pairs over its heads.
};

struct AttentionPlan {
  std::vector<AttentionRow> rows;
  std::vector<AttentionUnit> units;  // The heaviest first.
  std::vector<PanelSet> panel_sets;
};

// The units of a step over `batch` with `kv_heads` kv heads of `group` query heads each;
// `panels`: whether the scores may come from panels (simd::PanelsServe of the head width);
// `threads`: how many share the units.
//
// A block holds each token's rows of all kv heads side by side, so a unit of one kv head reads a
// quarter or less of every line run its prefetchers fetch: rows without panels (decode rows, short
// chunks: their keys read once) take all the kv heads in one unit, tile by tile (about 2× the
// bytes per second from memory at 8 kv heads), or where the row sets are fewer than two per
// thread, the kv heads split evenly between enough units to make that many.
AttentionPlan PlanAttention(const PagedBatch& batch, int64_t kv_heads, int64_t group,
                            int64_t block_size, bool panels, int64_t threads = 1);

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_PAGED_ATTENTION_PLAN_H_
