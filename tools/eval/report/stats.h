// The statistics of `arbor eval` reports: confidence intervals for accuracies and means, the
// exact McNemar test and a paired bootstrap for differences between strategies answering the
// same items, and the majority vote of self-consistency.
#ifndef ARBOR_TOOLS_EVAL_REPORT_STATS_H_
#define ARBOR_TOOLS_EVAL_REPORT_STATS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace arbor::eval {

struct Interval {
  double estimate = 0, lo = 0, hi = 0;
};

// The Wilson score interval of a proportion: unlike the normal approximation it stays inside
// [0, 1] and keeps its coverage near 0 and 1, where small-model accuracies often are.
// trials = 0 → {0, 0, 1}.
Interval WilsonInterval(int64_t successes, int64_t trials, double z = 1.959963984540054);

// The mean with a 95 % Student-t interval (n − 1 degrees of freedom): for per-item scores
// averaged over seeds, which are not 0/1. n < 2 → lo = hi = estimate.
Interval MeanInterval(absl::Span<const double> values);

// Two-sided exact McNemar test on the discordant pairs (b: only the first strategy right, c:
// only the second): p = min(1, 2·P(X ≤ min(b, c))), X ~ Binomial(b + c, 1/2). b + c = 0 → 1.
double McNemarExactP(int64_t b, int64_t c);

struct PairedDifference {
  double mean = 0, lo = 0, hi = 0;  // Of mean(a − b); 95 % percentile interval.
  double p_value = 1;               // min(1, 2·min(P*(d ≤ 0), P*(d ≥ 0))) over the resamples.
};

// Paired bootstrap over items: a[i] and b[i] are two strategies' scores on item i. Resampling
// items keeps each item's pairing, so item difficulty cancels. Deterministic in `seed` on every
// standard library. INVALID_ARGUMENT for different sizes or no items.
absl::StatusOr<PairedDifference> PairedBootstrap(absl::Span<const double> a,
                                                 absl::Span<const double> b, int resamples,
                                                 uint64_t seed);

// The most frequent non-empty answer; ties go to the one seen first; "" when all are empty.
std::string MajorityVote(absl::Span<const std::string> answers);

}  // namespace arbor::eval

#endif  // ARBOR_TOOLS_EVAL_REPORT_STATS_H_
