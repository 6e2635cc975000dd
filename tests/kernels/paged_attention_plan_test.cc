// The CPU attention's units (kernels/paged_attention_plan.h): a prompt in blocks of sixteen
// tokens with panels of all its keys, sibling decode rows grouped by their shared leading blocks
// (eight to a unit, panels of the shared keys), strangers and short sharing alone; every row in
// exactly one unit per kv head, the heaviest units first; units with panels of one kv head, the
// others of as many as leave two units per thread.
#include "kernels/paged_attention_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace arbor::kernels {
namespace {

// A batch built sequence by sequence: its query tokens, keys and block table.
struct Batch {
  std::vector<int32_t> q_start = {0}, kv_len, block_start = {0}, block_ids;

  void Add(int32_t tokens, int32_t keys, const std::vector<int32_t>& table) {
    q_start.push_back(q_start.back() + tokens);
    kv_len.push_back(keys);
    block_ids.insert(block_ids.end(), table.begin(), table.end());
    block_start.push_back(static_cast<int32_t>(block_ids.size()));
  }
  PagedBatch View() const {
    return {static_cast<int64_t>(kv_len.size()), q_start.data(), kv_len.data(), block_start.data(),
            block_ids.data()};
  }
};

std::vector<int32_t> Blocks(int32_t first, int32_t count) {
  std::vector<int32_t> table;
  for (int32_t b = 0; b < count; ++b) table.push_back(first + b);
  return table;
}

TEST(PlanAttention, GroupsSiblingsAndBlocksPrompts) {
  constexpr int64_t kKvHeads = 2, kGroup = 3, kBlockSize = 16;
  Batch b;
  b.Add(40, 40, Blocks(100, 3));      // Sequence 0: a 40-token prompt.
  for (int32_t s = 0; s < 10; ++s) {  // 1–10: siblings sharing blocks 0–7 (128 keys).
    std::vector<int32_t> table = Blocks(0, 8);
    table.push_back(200 + s);
    b.Add(1, 130 + s, table);
  }
  b.Add(1, 50, Blocks(300, 4));  // 11: a stranger.
  b.Add(1, 40, Blocks(0, 3));    // 12: shares block 0 but only 40 keys in all: below a tile...
  b.Add(1, 60, Blocks(50, 4));   // 13: ...and 13 starts elsewhere.
  const AttentionPlan plan = PlanAttention(b.View(), kKvHeads, kGroup, kBlockSize, true);

  // Every query token in exactly one unit per kv head.
  std::map<std::pair<int64_t, int64_t>, int> seen;  // (token, kv head) → units.
  for (const AttentionUnit& u : plan.units) {
    for (int64_t r = u.rows_begin; r < u.rows_end; ++r) {
      for (int64_t h = u.kv_head; h < u.kv_head + u.kv_heads; ++h) ++seen[{plan.rows[r].token, h}];
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(b.q_start.back() * kKvHeads));
  for (const auto& [key, units] : seen) EXPECT_EQ(units, 1) << "token " << key.first;
  for (size_t i = 1; i < plan.units.size(); ++i) {
    EXPECT_GE(plan.units[i - 1].cost, plan.units[i].cost) << "unit " << i;
  }

  // Per unit shape, for kv head 0: (first row's sequence, rows, table keys, panel set keys).
  std::vector<std::vector<int64_t>> shapes;
  for (const AttentionUnit& u : plan.units) {
    if (u.kv_head != 0) continue;
    const int64_t panel_keys = u.panel_set < 0 ? -1 : plan.panel_sets[u.panel_set].keys;
    shapes.push_back(
        {plan.rows[u.rows_begin].seq, u.rows_end - u.rows_begin, u.table_keys, panel_keys});
  }
  std::sort(shapes.begin(), shapes.end());
  // Sequence 12 shares block 0 with the siblings, so it joins their bucket, but only 40 shared
  // keys (less than a tile): the bucket's rows all go alone.
  const std::vector<std::vector<int64_t>> want = {
      {0, 8, 40, 40},  {0, 16, 16, 40}, {0, 16, 32, 40},  // The prompt: 16 + 16 + 8 tokens.
      {1, 1, 130, -1}, {2, 1, 131, -1}, {3, 1, 132, -1}, {4, 1, 133, -1}, {5, 1, 134, -1},
      {6, 1, 135, -1}, {7, 1, 136, -1}, {8, 1, 137, -1}, {9, 1, 138, -1}, {10, 1, 139, -1},
      {11, 1, 50, -1}, {12, 1, 40, -1}, {13, 1, 60, -1}};
  EXPECT_EQ(shapes, want);

  // Without sequence 12, the ten siblings share 128 keys: two units of 8 and 2 rows, panels of
  // the 128 keys (30 queries).
  Batch c;
  for (int32_t s = 0; s < 10; ++s) {
    std::vector<int32_t> table = Blocks(0, 8);
    table.push_back(200 + s);
    c.Add(1, 130 + s, table);
  }
  const AttentionPlan grouped = PlanAttention(c.View(), kKvHeads, kGroup, kBlockSize, true);
  ASSERT_EQ(grouped.units.size(), 4u);
  for (const AttentionUnit& u : grouped.units) {
    EXPECT_EQ(u.table_keys, 128);
    ASSERT_GE(u.panel_set, 0);
    EXPECT_EQ(grouped.panel_sets[u.panel_set].keys, 128);
  }
  EXPECT_EQ(grouped.units[0].rows_end - grouped.units[0].rows_begin, 8);
  // Without panels (a head width DotPanels does not serve), the same row sets, none with panels,
  // each in one unit of both kv heads (two row sets: two units for the one thread).
  const AttentionPlan rows_only = PlanAttention(c.View(), kKvHeads, kGroup, kBlockSize, false);
  ASSERT_EQ(rows_only.units.size(), 2u);
  for (const AttentionUnit& u : rows_only.units) {
    EXPECT_EQ(u.panel_set, -1);
    EXPECT_EQ(u.kv_head, 0);
    EXPECT_EQ(u.kv_heads, 2);
  }
}

// Units without panels take several kv heads (a block's rows of all heads are side by side), as
// many as leave two units per thread: (kv heads per unit, units) by decode rows and threads.
TEST(PlanAttention, SplitsKvHeadsBetweenTheThreads) {
  constexpr int64_t kKvHeads = 8, kGroup = 4, kBlockSize = 16;
  auto decode = [&](int32_t rows, int64_t threads) {
    Batch b;
    for (int32_t s = 0; s < rows; ++s) b.Add(1, 100, Blocks(10 * s, 7));
    const AttentionPlan plan = PlanAttention(b.View(), kKvHeads, kGroup, kBlockSize, true, threads);
    std::map<int64_t, int64_t> covered;  // Kv head → units, over all rows.
    for (const AttentionUnit& u : plan.units) {
      EXPECT_EQ(u.cost, 100 * u.kv_heads);
      for (int64_t h = u.kv_head; h < u.kv_head + u.kv_heads; ++h) covered[h] += 1;
    }
    for (const auto& [h, units] : covered) EXPECT_EQ(units, rows) << "kv head " << h;
    return std::pair{plan.units[0].kv_heads, static_cast<int64_t>(plan.units.size())};
  };
  EXPECT_EQ(decode(1, 1), (std::pair<int64_t, int64_t>{4, 2}));
  EXPECT_EQ(decode(1, 2), (std::pair<int64_t, int64_t>{2, 4}));
  EXPECT_EQ(decode(3, 2), (std::pair<int64_t, int64_t>{4, 6}));
  EXPECT_EQ(decode(4, 2), (std::pair<int64_t, int64_t>{8, 4}));
  EXPECT_EQ(decode(1, 16), (std::pair<int64_t, int64_t>{1, 8}));
  // A prompt's units keep one kv head each (their panels are per head).
  Batch prompt;
  prompt.Add(40, 40, Blocks(0, 3));
  for (const AttentionUnit& u :
       PlanAttention(prompt.View(), kKvHeads, kGroup, kBlockSize, true, 2).units) {
    EXPECT_EQ(u.kv_heads, 1);
  }
}

}  // namespace
}  // namespace arbor::kernels
