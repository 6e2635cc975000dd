// FairShares, the division of a crowded step between jobs: what a job wants when it wants less
// than its share, equal shares for the rest, a lone job's whole budget, one token each when the
// jobs outnumber the budget, and the indivisible remainder handed round by `turn`.
#include "worker/engine/fair_share.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace arbor::worker {
namespace {

using Shares = std::vector<int32_t>;

TEST(FairShareTest, SmallWantsAreMetAndTheWideSplitTheRest) {
  EXPECT_EQ(FairShares({1, 100}, 16, 0), (Shares{1, 15}));
  EXPECT_EQ(FairShares({3, 100, 100}, 16, 0), (Shares{3, 7, 6}));
  EXPECT_EQ(FairShares({2, 5, 0, 40}, 16, 0), (Shares{2, 5, 0, 9}));
}

TEST(FairShareTest, ALoneJobTakesTheWholeBudgetAndNoMoreThanItWants) {
  EXPECT_EQ(FairShares({100}, 16, 3), (Shares{16}));
  EXPECT_EQ(FairShares({4}, 16, 3), (Shares{4}));
  EXPECT_EQ(FairShares({4, 6}, 16, 0), (Shares{4, 6}));
}

TEST(FairShareTest, MoreJobsThanTokensGetOneTokenEach) {
  EXPECT_EQ(FairShares({9, 1, 9, 9, 9}, 3, 0), (Shares{1, 1, 1, 1, 1}));
}

TEST(FairShareTest, TheRemainderGoesRoundByTurn) {
  // 16 tokens over three wide jobs: 5 each and one left over, for a different job each turn.
  std::vector<int32_t> extra(3, 0);
  for (size_t turn = 0; turn < 6; ++turn) {
    const Shares shares = FairShares({50, 50, 50}, 16, turn);
    EXPECT_EQ(std::accumulate(shares.begin(), shares.end(), 0), 16) << turn;
    for (size_t j = 0; j < 3; ++j) extra[j] += shares[j] - 5;
  }
  EXPECT_EQ(extra, (std::vector<int32_t>{2, 2, 2}));
  // A satisfied job is skipped: the spare token goes to the next job that wants more.
  EXPECT_EQ(FairShares({2, 50, 50}, 17, 0), (Shares{2, 8, 7}));
  EXPECT_EQ(FairShares({2, 50, 50}, 17, 5), (Shares{2, 7, 8}));
}

}  // namespace
}  // namespace arbor::worker
