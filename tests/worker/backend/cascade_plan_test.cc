// Which decode rows cascade attention groups (worker/backend/cascade_plan.h): siblings over shared
// blocks in one group with their common whole blocks as prefix, every row exactly once, groups
// cut at max_members, and nothing planned where nothing is shared or rows are not decode rows.
#include "worker/backend/cascade_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace arbor::worker {
namespace {

constexpr int32_t kBlock = 16;

struct Rows {
  std::vector<std::vector<int32_t>> tables, tokens;
  std::vector<int32_t> start;
  StepBatch Batch() const {
    std::vector<ForwardRow> rows;
    for (size_t r = 0; r < tables.size(); ++r) rows.push_back({tokens[r], start[r], tables[r]});
    return MakeStepBatch(rows, kBlock);
  }
  // A decode row at position `pos` over `table`.
  void Add(std::vector<int32_t> table, int32_t pos, int32_t n = 1) {
    tables.push_back(std::move(table));
    tokens.push_back(std::vector<int32_t>(n, 7));
    start.push_back(pos);
  }
};

// Every row appears in exactly one group, and key_begin is its group's prefix.
void ExpectCovers(const CascadePlan& plan, int32_t rows) {
  ASSERT_EQ(plan.key_begin.size(), static_cast<size_t>(rows));
  std::vector<int> seen(rows, 0);
  for (int64_t g = 0; g < plan.num_groups(); ++g) {
    for (int32_t i = plan.group_start[g]; i < plan.group_start[g + 1]; ++i) {
      ++seen[plan.tokens[i]];
      EXPECT_EQ(plan.key_begin[plan.tokens[i]], plan.prefix_len[g]);
    }
  }
  for (int32_t r = 0; r < rows; ++r) EXPECT_EQ(seen[r], 1) << "row " << r;
}

TEST(CascadePlan, SiblingsShareTheirCommonWholeBlocks) {
  Rows rows;
  rows.Add({10, 11, 12, 20}, 52);  // 53 keys: 3 whole shared blocks + 5 own.
  rows.Add({30, 31}, 20);          // Shares nothing.
  rows.Add({10, 11, 12, 21}, 50);
  rows.Add({10, 11, 13, 22}, 60);  // Parted from the others at the third block.
  const CascadePlan plan = PlanCascade(rows.Batch(), kBlock, 8);
  ExpectCovers(plan, 4);
  ASSERT_EQ(plan.num_groups(), 2);
  EXPECT_EQ(plan.prefix_len[0], 2 * kBlock);  // Rows 0, 2, 3 (first block 10).
  EXPECT_EQ(plan.group_start[1] - plan.group_start[0], 3);
  EXPECT_EQ(plan.prefix_len[1], 0);  // Row 1 alone.
  EXPECT_EQ(plan.max_members, 3);
  EXPECT_EQ(plan.max_prefix_len, 2 * kBlock);
}

TEST(CascadePlan, EachMemberKeepsItsNewestKey) {
  Rows rows;
  rows.Add({10, 11, 12}, 47);  // 48 keys: the third block's last key is the row's own query.
  rows.Add({10, 11, 12, 20}, 55);
  const CascadePlan plan = PlanCascade(rows.Batch(), kBlock, 8);
  ExpectCovers(plan, 2);
  ASSERT_EQ(plan.num_groups(), 1);
  EXPECT_EQ(plan.prefix_len[0], 2 * kBlock);
}

TEST(CascadePlan, GroupsAreCutAtMaxMembers) {
  Rows rows;
  for (int32_t r = 0; r < 5; ++r) rows.Add({10, 11, 12, 20 + r}, 50);
  const CascadePlan plan = PlanCascade(rows.Batch(), kBlock, 2);
  ExpectCovers(plan, 5);
  ASSERT_EQ(plan.num_groups(), 3);
  EXPECT_EQ(plan.prefix_len[0], 3 * kBlock);
  EXPECT_EQ(plan.prefix_len[1], 3 * kBlock);
  EXPECT_EQ(plan.prefix_len[2], 0);  // The one left over reads its prefix as its own keys.
  EXPECT_EQ(plan.max_members, 2);
}

TEST(CascadePlan, GroupsBelowMinMembersDoNotCascade) {
  Rows rows;
  for (int32_t r = 0; r < 5; ++r) rows.Add({10, 11, 12, 20 + r}, 50);
  const CascadePlan plan = PlanCascade(rows.Batch(), kBlock, /*max_members=*/4, /*min_members=*/3);
  ExpectCovers(plan, 5);
  ASSERT_EQ(plan.num_groups(), 2);
  EXPECT_EQ(plan.group_start[1], 4);
  EXPECT_EQ(plan.prefix_len[0], 3 * kBlock);
  EXPECT_EQ(plan.prefix_len[1], 0);
  EXPECT_EQ(plan.key_begin[4], 0);
  EXPECT_EQ(PlanCascade(rows.Batch(), kBlock, 8, /*min_members=*/6).num_groups(), 0);
}

TEST(CascadePlan, NothingSharedOrNotDecodeGivesNoPlan) {
  Rows apart;
  apart.Add({1, 2}, 20);
  apart.Add({3, 4}, 20);
  EXPECT_EQ(PlanCascade(apart.Batch(), kBlock, 8).num_groups(), 0);
  Rows prefill;
  prefill.Add({10, 11, 12, 20}, 50, /*n=*/3);
  prefill.Add({10, 11, 12, 21}, 50);
  EXPECT_EQ(PlanCascade(prefill.Batch(), kBlock, 8).num_groups(), 0);
  Rows within_a_block;  // Siblings still inside their first block share no whole block.
  within_a_block.Add({10, 20}, 5);
  within_a_block.Add({10, 21}, 5);
  EXPECT_EQ(PlanCascade(within_a_block.Batch(), kBlock, 8).num_groups(), 0);
}

}  // namespace
}  // namespace arbor::worker
