// The report statistics against hand-computed values.
#include "tools/eval/report/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace arbor::eval {
namespace {

TEST(WilsonIntervalTest, HandComputedCases) {
  const Interval eight = WilsonInterval(8, 10);
  EXPECT_DOUBLE_EQ(eight.estimate, 0.8);
  EXPECT_NEAR(eight.lo, 0.4902, 1e-4);
  EXPECT_NEAR(eight.hi, 0.9433, 1e-4);
  const Interval none = WilsonInterval(0, 10);
  EXPECT_EQ(none.lo, 0);
  EXPECT_NEAR(none.hi, 0.2775, 1e-4);
  const Interval all = WilsonInterval(10, 10);
  EXPECT_NEAR(all.lo, 0.7225, 1e-4);
  EXPECT_NEAR(all.hi, 1, 1e-12);
  const Interval empty = WilsonInterval(0, 0);
  EXPECT_EQ(empty.lo, 0);
  EXPECT_EQ(empty.hi, 1);
}

TEST(MeanIntervalTest, StudentTHalfWidth) {
  const std::vector<double> values = {1, 2, 3, 4, 5};
  const Interval i = MeanInterval(values);
  EXPECT_DOUBLE_EQ(i.estimate, 3);
  const double half = 2.776445 * std::sqrt(2.5) / std::sqrt(5.0);
  EXPECT_NEAR(i.hi - 3, half, 1e-3);
  EXPECT_NEAR(3 - i.lo, half, 1e-3);
  // Large n: t approaches z (1.96) — 1000 alternating 0/1 values, sd = 0.50025.
  std::vector<double> many;
  for (int k = 0; k < 1000; ++k) many.push_back(k % 2);
  const Interval big = MeanInterval(many);
  EXPECT_NEAR(big.hi - 0.5, 1.9623 * 0.500250 / std::sqrt(1000.0), 1e-4);
  const std::vector<double> one = {0.25};
  EXPECT_EQ(MeanInterval(one).lo, 0.25);
  EXPECT_EQ(MeanInterval(one).hi, 0.25);
}

TEST(McNemarTest, ExactBinomialTail) {
  EXPECT_NEAR(McNemarExactP(1, 9), 0.021484375, 1e-12);  // 2·(1 + 10)/1024.
  EXPECT_DOUBLE_EQ(McNemarExactP(5, 5), 1);
  EXPECT_DOUBLE_EQ(McNemarExactP(0, 0), 1);
  EXPECT_NEAR(McNemarExactP(0, 20), 2 * std::pow(0.5, 20), 1e-15);
  const double big = McNemarExactP(40000, 41000);
  EXPECT_GT(big, 0);
  EXPECT_LT(big, 1e-3);  // 1000 of 81000 discordant pairs: z ≈ 3.5.
}

TEST(PairedBootstrapTest, KnownCasesAndDeterminism) {
  const std::vector<double> a = {1, 0, 1, 1, 0, 1}, same = a;
  absl::StatusOr<PairedDifference> none = PairedBootstrap(a, same, 2000, 7);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->mean, 0);
  EXPECT_EQ(none->lo, 0);
  EXPECT_EQ(none->hi, 0);
  EXPECT_EQ(none->p_value, 1);

  const std::vector<double> ones = {1, 1, 1, 1}, zeros = {0, 0, 0, 0};
  absl::StatusOr<PairedDifference> all = PairedBootstrap(ones, zeros, 2000, 7);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->mean, 1);
  EXPECT_EQ(all->lo, 1);
  EXPECT_EQ(all->hi, 1);
  EXPECT_EQ(all->p_value, 0);

  const std::vector<double> x = {1, 0.5, 0, 1, 0.25}, y = {0, 0.5, 0, 0.75, 0.5};
  absl::StatusOr<PairedDifference> first = PairedBootstrap(x, y, 5000, 11);
  absl::StatusOr<PairedDifference> again = PairedBootstrap(x, y, 5000, 11);
  ASSERT_TRUE(first.ok());
  EXPECT_DOUBLE_EQ(first->mean, (1 + 0 + 0 + 0.25 - 0.25) / 5.0);
  EXPECT_EQ(first->lo, again->lo);
  EXPECT_EQ(first->hi, again->hi);
  EXPECT_LE(first->lo, first->mean);
  EXPECT_GE(first->hi, first->mean);

  EXPECT_FALSE(PairedBootstrap(x, ones, 10, 1).ok());
  EXPECT_FALSE(PairedBootstrap({}, {}, 10, 1).ok());
}

TEST(MajorityVoteTest, TiesGoToTheFirstSeen) {
  const std::vector<std::string> tie = {"a", "b", "b", "a"};
  EXPECT_EQ(MajorityVote(tie), "a");
  const std::vector<std::string> clear = {"a", "b", "b", "", ""};
  EXPECT_EQ(MajorityVote(clear), "b");
  const std::vector<std::string> empty = {"", ""};
  EXPECT_EQ(MajorityVote(empty), "");
}

}  // namespace
}  // namespace arbor::eval
