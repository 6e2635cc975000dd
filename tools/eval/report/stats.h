// The statistics of `arbor eval` reports: confidence intervals for accuracies and means, the
// exact McNemar test and a paired bootstrap for differences between strategies answering the
// same items, and the majority vote of self-consistency. Pure functions with no I/O, so each
// can be checked against hand-computed values.
#ifndef ARBOR_TOOLS_EVAL_REPORT_STATS_H_
#define ARBOR_TOOLS_EVAL_REPORT_STATS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace arbor::tools::eval {

// A point estimate with the bounds of its confidence interval.
struct Interval {
  double estimate = 0, lo = 0, hi = 0;
};

// The Wilson score interval of a proportion, for one seed's accuracy (`successes` of `trials`
// items right): unlike the normal (Wald) interval it stays inside [0, 1] and keeps its coverage
// near 0 and 1, where small-model accuracies often are. `z` is the normal quantile (95 % by
// default). `successes` is clamped to [0, trials]; trials ≤ 0 → {0, 0, 1}: nothing is known.
Interval WilsonInterval(int64_t successes, int64_t trials, double z = 1.959963984540054);

// The mean with a 95 % Student-t interval, mean ± t(0.975, n − 1)·s/√n. For values that are not
// 0/1 — per-item accuracy averaged over seeds (one value per item, so seeds of the same item do
// not count as independent) and token counts — and for few values, where the normal quantile
// would be too narrow. n < 2 → lo = hi = estimate (no spread to measure); n = 0 → all zero.
Interval MeanInterval(absl::Span<const double> values);

// Two-sided exact McNemar test on the discordant pairs (b: only the first strategy right, c:
// only the second): p = min(1, 2·P(X ≤ min(b, c))), X ~ Binomial(b + c, 1/2). Exact rather than
// the χ² approximation because discordant counts are often small; summed in log space so
// b + c up to 10^6 and beyond neither overflows nor loses the tail. b + c = 0 → 1.
double McNemarExactP(int64_t b, int64_t c);

// The mean difference of paired scores with its bootstrap interval and p-value.
struct PairedDifference {
  double mean = 0, lo = 0, hi = 0;  // mean(a − b) and its 95 % percentile interval.
  double p_value = 1;               // See PairedBootstrap.
};

// Paired bootstrap over items: a[i] and b[i] are two strategies' scores on item i (e.g. per-item
// accuracy averaged over seeds). Each of `resamples` resamples draws n items with replacement
// and takes the mean of a − b over them; resampling whole items keeps each pairing, so item
// difficulty cancels and no distribution is assumed for the scores.
//   mean    the plain mean of a − b (not a resampled quantity);
//   lo, hi  the 2.5 % and 97.5 % order statistics of the resampled means (indices
//           ⌊0.025·(R − 1)⌋ and ⌈0.975·(R − 1)⌉ of the sorted R means: the wider choice);
//   p_value min(1, 2·min(F≤0, F≥0)), F≤0 and F≥0 the fractions of resampled means ≤ 0 and ≥ 0:
//           how far 0 sits in either tail of the bootstrap distribution, doubled for two sides;
//           it is below 0.05 about when 0 lies outside the 95 % interval, and 1 when every
//           difference is 0. Its resolution is 1/R.
// Items are drawn by std::mt19937_64 seeded with `seed` and a rejection-sampled bounded draw,
// both fully specified, so a seed gives the same result on every standard library.
// INVALID_ARGUMENT for sizes that differ (both named), no items, non-finite scores, or
// resamples < 1.
absl::StatusOr<PairedDifference> PairedBootstrap(absl::Span<const double> a,
                                                 absl::Span<const double> b, int resamples,
                                                 uint64_t seed);

// Self-consistency's vote: the most frequent non-empty answer (empty means no answer was
// extracted, which must not win); ties go to the answer whose first occurrence is earliest, so
// the result does not depend on hashing; "" when all are empty or there are none.
std::string MajorityVote(absl::Span<const std::string> answers);

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_REPORT_STATS_H_
