// The report statistics against hand-computed values and independent computations.
#include "tools/eval/report/stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace arbor::tools::eval {
namespace {

using ::testing::HasSubstr;

TEST(WilsonIntervalTest, EightOfTen) {
  // center = (0.8 + z²/20)/(1 + z²/10), half = z·√(0.016 + z²/400)/(1 + z²/10), z = 1.96.
  const Interval i = WilsonInterval(8, 10);
  EXPECT_DOUBLE_EQ(i.estimate, 0.8);
  EXPECT_NEAR(i.lo, 0.4902, 1e-4);
  EXPECT_NEAR(i.hi, 0.9433, 1e-4);
}

TEST(WilsonIntervalTest, EdgesStayInsideTheUnitInterval) {
  // 0/10: center = half = (z²/20)/(1 + z²/10), so lo = 0 and hi = 2·center = 0.2775.
  const Interval none = WilsonInterval(0, 10);
  EXPECT_EQ(none.estimate, 0);
  EXPECT_EQ(none.lo, 0);
  EXPECT_NEAR(none.hi, 0.2775, 1e-4);
  // 10/10 mirrors it.
  const Interval all = WilsonInterval(10, 10);
  EXPECT_EQ(all.estimate, 1);
  EXPECT_NEAR(all.lo, 1 - 0.2775, 1e-4);
  EXPECT_NEAR(all.hi, 1, 1e-12);
  // No trials: nothing known.
  const Interval empty = WilsonInterval(0, 0);
  EXPECT_EQ(empty.estimate, 0);
  EXPECT_EQ(empty.lo, 0);
  EXPECT_EQ(empty.hi, 1);
  // Out-of-range successes are clamped rather than producing a proportion above 1.
  EXPECT_EQ(WilsonInterval(12, 10).estimate, 1);
}

TEST(MeanIntervalTest, StudentTForFiveValues) {
  // mean 3, s² = 2.5, t(0.975, 4) = 2.776445.
  const std::vector<double> values = {1, 2, 3, 4, 5};
  const Interval i = MeanInterval(values);
  EXPECT_DOUBLE_EQ(i.estimate, 3);
  const double half = 2.776445 * std::sqrt(2.5) / std::sqrt(5.0);
  EXPECT_NEAR(i.hi - 3, half, 1e-3);
  EXPECT_NEAR(3 - i.lo, half, 1e-3);
}

// n alternating 0/1 values: mean 1/2, s = √(n/4/(n − 1)).
Interval Alternating(int n) {
  std::vector<double> values;
  for (int k = 0; k < n; ++k) values.push_back(k % 2);
  return MeanInterval(values);
}

double AlternatingHalfWidth(int n, double t) {
  return t * std::sqrt(n / 4.0 / (n - 1)) / std::sqrt(static_cast<double>(n));
}

TEST(MeanIntervalTest, TQuantileAcrossTheTableBoundaryAndTowardsNormal) {
  // t(0.975, 31) = 2.039513 and t(0.975, 39) = 2.022691, past the table, by the expansion.
  EXPECT_NEAR(Alternating(32).hi - 0.5, AlternatingHalfWidth(32, 2.039513), 1e-6);
  EXPECT_NEAR(Alternating(40).hi - 0.5, AlternatingHalfWidth(40, 2.022691), 1e-6);
  // n = 1000: t(0.975, 999) = 1.962341, just wider than the normal's 1.959964.
  const Interval big = Alternating(1000);
  EXPECT_NEAR(big.hi - 0.5, AlternatingHalfWidth(1000, 1.962341), 1e-7);
  EXPECT_GT(big.hi - 0.5, AlternatingHalfWidth(1000, 1.959964));
  EXPECT_NEAR(big.hi - 0.5, AlternatingHalfWidth(1000, 1.959964), 1e-4);
}

TEST(MeanIntervalTest, TooFewValuesHaveNoSpread) {
  const std::vector<double> one = {0.25};
  const Interval i = MeanInterval(one);
  EXPECT_EQ(i.estimate, 0.25);
  EXPECT_EQ(i.lo, 0.25);
  EXPECT_EQ(i.hi, 0.25);
  const Interval none = MeanInterval({});
  EXPECT_EQ(none.estimate, 0);
  EXPECT_EQ(none.lo, 0);
  EXPECT_EQ(none.hi, 0);
}

TEST(McNemarTest, SmallCountsByHand) {
  EXPECT_NEAR(McNemarExactP(1, 9), 0.021484375, 1e-15);  // 2·(1 + 10)/2^10.
  EXPECT_NEAR(McNemarExactP(9, 1), 0.021484375, 1e-15);  // Symmetric.
  // 2·(1 + 20 + 190 + 1140)/2^20.
  EXPECT_NEAR(McNemarExactP(3, 17), 0.0025768280029296875, 1e-15);
  EXPECT_NEAR(McNemarExactP(0, 20), 2 * std::pow(0.5, 20), 1e-18);
  EXPECT_EQ(McNemarExactP(5, 5), 1);
  EXPECT_NEAR(McNemarExactP(5, 6), 1, 1e-12);  // 2·P(X ≤ 5 | n = 11) = 2·1/2.
  EXPECT_EQ(McNemarExactP(0, 0), 1);
}

TEST(McNemarTest, LargeCountsAgainstHighPrecisionSums) {
  // References: the binomial tail summed in 30-digit arithmetic.
  const double mid = McNemarExactP(100, 150);
  EXPECT_NEAR(mid / 0.0018833009350761569, 1, 1e-9);
  const double big = McNemarExactP(40000, 41000);
  EXPECT_TRUE(std::isfinite(big));
  EXPECT_GT(big, 0);
  EXPECT_LT(big, 1);
  EXPECT_NEAR(big / 0.000447821823137557, 1, 1e-7);
  // b + c = 10^6: two standard deviations apart, p ≈ 0.0456 as the normal approximation says.
  EXPECT_NEAR(McNemarExactP(499000, 501000) / 0.045608299865382086, 1, 1e-6);
  // 2^−10^6 is below the smallest double: 0, not NaN.
  const double all_one_way = McNemarExactP(0, 1000000);
  EXPECT_TRUE(std::isfinite(all_one_way));
  EXPECT_LT(all_one_way, 1e-300);
}

TEST(PairedBootstrapTest, IdenticalScoresDifferByNothing) {
  const std::vector<double> a = {1, 0, 1, 1, 0, 1};
  absl::StatusOr<PairedDifference> d = PairedBootstrap(a, a, 2000, 7);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->mean, 0);
  EXPECT_EQ(d->lo, 0);
  EXPECT_EQ(d->hi, 0);
  EXPECT_EQ(d->p_value, 1);  // Every resampled mean is both ≤ 0 and ≥ 0.
}

TEST(PairedBootstrapTest, AConstantDifferenceIsCertain) {
  const std::vector<double> ones = {1, 1, 1, 1}, zeros = {0, 0, 0, 0};
  absl::StatusOr<PairedDifference> d = PairedBootstrap(ones, zeros, 2000, 7);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->mean, 1);
  EXPECT_EQ(d->lo, 1);
  EXPECT_EQ(d->hi, 1);
  EXPECT_EQ(d->p_value, 0);  // No resampled mean is ≤ 0.
}

TEST(PairedBootstrapTest, TwoItemsMatchTheirExactResamplingDistribution) {
  // Differences {0, 1}: a resample of two items has mean 0, 1/2, 1 with probability 1/4, 1/2,
  // 1/4. So the 95 % interval is [0, 1] and p = 2·P*(mean ≤ 0) ≈ 2·1/4 (sd of the estimate with
  // 20000 resamples: 2·√(3/16/20000) ≈ 0.006).
  const std::vector<double> a = {0, 1}, b = {0, 0};
  absl::StatusOr<PairedDifference> d = PairedBootstrap(a, b, 20000, 3);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->mean, 0.5);
  EXPECT_EQ(d->lo, 0);
  EXPECT_EQ(d->hi, 1);
  EXPECT_NEAR(d->p_value, 0.5, 0.03);
}

TEST(PairedBootstrapTest, MeanIsThePlainMeanAndTheSeedFixesTheRest) {
  const std::vector<double> x = {1, 0.5, 0, 1, 0.25}, y = {0, 0.5, 0, 0.75, 0.5};
  absl::StatusOr<PairedDifference> first = PairedBootstrap(x, y, 5000, 11);
  absl::StatusOr<PairedDifference> again = PairedBootstrap(x, y, 5000, 11);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(again.ok()) << again.status();
  double sum = 0;  // The plain mean of the differences, computed here independently.
  for (size_t i = 0; i < x.size(); ++i) sum += x[i] - y[i];
  EXPECT_DOUBLE_EQ(first->mean, sum / 5);
  EXPECT_EQ(first->lo, again->lo);
  EXPECT_EQ(first->hi, again->hi);
  EXPECT_EQ(first->p_value, again->p_value);
  EXPECT_LE(first->lo, first->mean);
  EXPECT_GE(first->hi, first->mean);
  EXPECT_GE(first->lo, -0.25);  // No resample can go below the smallest difference...
  EXPECT_LE(first->hi, 1);      // ...or above the largest.
}

TEST(PairedBootstrapTest, RejectsUnpairedOrUnusableInput) {
  const std::vector<double> five = {1, 0, 1, 0, 1}, four = {1, 1, 1, 1};
  absl::StatusOr<PairedDifference> mismatch = PairedBootstrap(five, four, 10, 1);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatch.status().message(), HasSubstr("5 scores vs 4"));
  EXPECT_FALSE(PairedBootstrap({}, {}, 10, 1).ok());
  EXPECT_FALSE(PairedBootstrap(four, four, 0, 1).ok());
  const std::vector<double> with_nan = {1, NAN, 1, 1};
  EXPECT_FALSE(PairedBootstrap(with_nan, four, 10, 1).ok());
}

TEST(MajorityVoteTest, MostFrequentNonEmptyAnswer) {
  const std::vector<std::string> clear = {"a", "b", "b", "", "", ""};
  EXPECT_EQ(MajorityVote(clear), "b");  // Empty answers never win, however many.
  const std::vector<std::string> single = {"42"};
  EXPECT_EQ(MajorityVote(single), "42");
}

TEST(MajorityVoteTest, TiesGoToTheEarliestFirstOccurrence) {
  const std::vector<std::string> tie = {"a", "b", "b", "a"};
  EXPECT_EQ(MajorityVote(tie), "a");
  const std::vector<std::string> after_empty = {"", "y", "x", "x", "y"};
  EXPECT_EQ(MajorityVote(after_empty), "y");
}

TEST(MajorityVoteTest, NoAnswers) {
  const std::vector<std::string> empty = {"", ""};
  EXPECT_EQ(MajorityVote(empty), "");
  EXPECT_EQ(MajorityVote({}), "");
}

}  // namespace
}  // namespace arbor::tools::eval
