#include "tools/eval/report/stats.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace arbor::eval {
namespace {

constexpr double kZ975 = 1.959963984540054;

// The 97.5 % quantile of Student's t with `df` degrees of freedom: exact table values for small
// df, then the Cornish–Fisher expansion around the normal quantile (error < 1e-4 for df > 30).
double TQuantile975(int64_t df) {
  static constexpr double kTable[] = {
      0,      12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
      2.2010, 2.1788,  2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796,
      2.0739, 2.0687,  2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (df < 1) return 0;
  if (df <= 30) return kTable[df];
  const double z = kZ975, n = static_cast<double>(df);
  const double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
  return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * n * n * n);
}

double Mean(absl::Span<const double> values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

// Unbiased draw in [0, n): rejection of the top partial range, so the result is the same on
// every standard library (std::uniform_int_distribution's algorithm is not specified).
uint64_t Below(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

}  // namespace

Interval WilsonInterval(int64_t successes, int64_t trials, double z) {
  if (trials <= 0) return {0, 0, 1};
  const double n = static_cast<double>(trials);
  const double p = static_cast<double>(successes) / n;
  const double z2 = z * z;
  const double center = (p + z2 / (2 * n)) / (1 + z2 / n);
  const double half = z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n);
  return {p, std::max(0.0, center - half), std::min(1.0, center + half)};
}

Interval MeanInterval(absl::Span<const double> values) {
  const double mean = Mean(values);
  const int64_t n = static_cast<int64_t>(values.size());
  if (n < 2) return {mean, mean, mean};
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  const double half =
      TQuantile975(n - 1) * std::sqrt(squares / static_cast<double>(n - 1)) / std::sqrt(n);
  return {mean, mean - half, mean + half};
}

double McNemarExactP(int64_t b, int64_t c) {
  const int64_t n = b + c;
  if (n == 0) return 1;
  const int64_t k = std::min(b, c);
  // P(X ≤ k) summed in log space: log C(n, i) − n·log 2.
  const double log_half_n = -static_cast<double>(n) * std::log(2.0);
  double tail = 0;
  for (int64_t i = 0; i <= k; ++i) {
    const double log_choose =
        std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0);
    tail += std::exp(log_choose + log_half_n);
  }
  return std::min(1.0, 2 * tail);
}

absl::StatusOr<PairedDifference> PairedBootstrap(absl::Span<const double> a,
                                                 absl::Span<const double> b, int resamples,
                                                 uint64_t seed) {
  if (a.size() != b.size()) {
    return absl::InvalidArgumentError(absl::StrCat("paired bootstrap: ", a.size(), " scores vs ",
                                                   b.size(), "; the items must be the same"));
  }
  if (a.empty()) return absl::InvalidArgumentError("paired bootstrap: no items");
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  PairedDifference out;
  out.mean = Mean(d);
  std::mt19937_64 rng(seed);
  std::vector<double> means(std::max(resamples, 1));
  int64_t at_most_zero = 0, at_least_zero = 0;
  for (double& m : means) {
    double sum = 0;
    for (size_t i = 0; i < d.size(); ++i) sum += d[Below(rng, d.size())];
    m = sum / static_cast<double>(d.size());
    at_most_zero += m <= 0;
    at_least_zero += m >= 0;
  }
  std::sort(means.begin(), means.end());
  const auto at = [&](double q) {
    return means[static_cast<size_t>(std::floor(q * static_cast<double>(means.size() - 1)))];
  };
  out.lo = at(0.025);
  out.hi = at(0.975);
  const double count = static_cast<double>(means.size());
  out.p_value = std::min(1.0, 2 * std::min(at_most_zero / count, at_least_zero / count));
  return out;
}

std::string MajorityVote(absl::Span<const std::string> answers) {
  absl::flat_hash_map<std::string, int> counts;
  for (const std::string& answer : answers) {
    if (!answer.empty()) ++counts[answer];
  }
  std::string best;
  int best_count = 0;
  for (const std::string& answer : answers) {  // In order: the first of tied answers wins.
    if (!answer.empty() && counts[answer] > best_count) {
      best = answer;
      best_count = counts[answer];
    }
  }
  return best;
}

}  // namespace arbor::eval
