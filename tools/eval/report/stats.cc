#include "tools/eval/report/stats.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace arbor::tools::eval {
namespace {

constexpr double kZ975 = 1.959963984540054;

// The 97.5 % quantile of Student's t with `df` degrees of freedom. Small df, where every
// expansion around the normal is poor, come from a table (to 1e-6); above it the Cornish–Fisher
// expansion to 1/df^4 is within 3e-8 at df = 31 and better beyond.
double TQuantile975(int64_t df) {
  static constexpr double kTable[] = {
      0,        12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624,
      2.306004, 2.262157,  2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450,
      2.119905, 2.109816,  2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658,
      2.063899, 2.059539,  2.055529, 2.051831, 2.048407, 2.045230, 2.042272};
  constexpr int64_t kTableMax = std::size(kTable) - 1;
  if (df < 1) return 0;
  if (df <= kTableMax) return kTable[df];
  const double z = kZ975, n = static_cast<double>(df);
  const double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
  return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * n * n * n) +
         (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * n * n * n * n);
}

double Mean(absl::Span<const double> values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

// ln P(X ≤ k) for X ~ Binomial(n, 1/2) and k < n/2. The terms grow towards i = k, so the sum
// is the last term (from lgamma) times 1 + r_{k−1} + r_{k−1}·r_{k−2} + …, each ratio
// P(i − 1)/P(i) = i/(n − i + 1) < 1; nothing is exponentiated before the final log, and the
// loop stops once the terms no longer change the sum.
double LogBinomialHalfLowerTail(int64_t n, int64_t k) {
  const double nd = static_cast<double>(n), kd = static_cast<double>(k);
  const double log_last =
      std::lgamma(nd + 1) - std::lgamma(kd + 1) - std::lgamma(nd - kd + 1) - nd * std::log(2.0);
  double sum = 1, term = 1;
  for (int64_t i = k; i >= 1 && term > sum * 1e-17; --i) {
    term *= static_cast<double>(i) / static_cast<double>(n - i + 1);
    sum += term;
  }
  return log_last + std::log(sum);
}

// An unbiased draw in [0, n): values of the generator at or above the largest multiple of n it
// can produce are rejected. Written out because std::uniform_int_distribution's algorithm is
// left to each standard library, which would make bootstrap results differ between them.
uint64_t Below(std::mt19937_64& rng, uint64_t n) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  // A multiple of n; the kMax % n + 1 values from it up would favour the smallest results.
  const uint64_t limit = kMax - kMax % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

absl::Status CheckPairedScores(absl::Span<const double> a, absl::Span<const double> b,
                               int resamples) {
  if (a.size() != b.size()) {
    return absl::InvalidArgumentError(absl::StrCat("paired bootstrap: ", a.size(), " scores vs ",
                                                   b.size(), "; the items must be the same"));
  }
  if (a.empty()) return absl::InvalidArgumentError("paired bootstrap: no items");
  if (resamples < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("paired bootstrap: resamples must be at least 1, got ", resamples));
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("paired bootstrap: item ", i, " has a non-finite score"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

Interval WilsonInterval(int64_t successes, int64_t trials, double z) {
  if (trials <= 0) return {0, 0, 1};
  const double n = static_cast<double>(trials);
  const double p = static_cast<double>(std::clamp<int64_t>(successes, 0, trials)) / n;
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
  const double sd = std::sqrt(squares / static_cast<double>(n - 1));
  const double half = TQuantile975(n - 1) * sd / std::sqrt(static_cast<double>(n));
  return {mean, mean - half, mean + half};
}

double McNemarExactP(int64_t b, int64_t c) {
  b = std::max<int64_t>(b, 0), c = std::max<int64_t>(c, 0);
  const int64_t n = b + c, k = std::min(b, c);
  // P(X ≤ n/2) ≥ 1/2, so balanced counts (including none at all) give p = 1.
  if (2 * k >= n) return 1;
  return std::min(1.0, 2 * std::exp(LogBinomialHalfLowerTail(n, k)));
}

absl::StatusOr<PairedDifference> PairedBootstrap(absl::Span<const double> a,
                                                 absl::Span<const double> b, int resamples,
                                                 uint64_t seed) {
  if (absl::Status s = CheckPairedScores(a, b, resamples); !s.ok()) return s;
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  std::mt19937_64 rng(seed);
  std::vector<double> means(static_cast<size_t>(resamples));
  int64_t at_most_zero = 0, at_least_zero = 0;
  for (double& m : means) {
    double sum = 0;
    for (size_t i = 0; i < d.size(); ++i) sum += d[Below(rng, d.size())];
    m = sum / static_cast<double>(d.size());
    at_most_zero += m <= 0;
    at_least_zero += m >= 0;
  }
  std::sort(means.begin(), means.end());
  const double last = static_cast<double>(means.size() - 1);
  const double count = static_cast<double>(means.size());
  PairedDifference out;
  out.mean = Mean(d);
  out.lo = means[static_cast<size_t>(std::floor(0.025 * last))];
  out.hi = means[static_cast<size_t>(std::ceil(0.975 * last))];
  out.p_value = std::min(1.0, 2 * std::min(static_cast<double>(at_most_zero) / count,
                                           static_cast<double>(at_least_zero) / count));
  return out;
}

std::string MajorityVote(absl::Span<const std::string> answers) {
  absl::flat_hash_map<std::string, int64_t> counts;
  for (const std::string& answer : answers) {
    if (!answer.empty()) ++counts[answer];
  }
  std::string best;
  int64_t best_count = 0;
  for (const std::string& answer : answers) {  // In order, and only strictly more replaces.
    if (answer.empty()) continue;
    const int64_t count = counts.at(answer);
    if (count > best_count) {
      best = answer;
      best_count = count;
    }
  }
  return best;
}

}  // namespace arbor::tools::eval
