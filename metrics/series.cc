#include "metrics/series.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "metrics/misuse.h"

namespace arbor::metrics {

Histogram::Histogram(std::shared_ptr<const std::vector<double>> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)),
      counts_(new std::atomic<uint64_t>[upper_bounds_->size() + 1]) {
  for (size_t i = 0; i <= upper_bounds_->size(); ++i) counts_[i].store(0);
}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  const std::vector<double>& bounds = *upper_bounds_;
  const size_t bucket = std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot snapshot;
  snapshot.cumulative.resize(upper_bounds_->size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i < snapshot.cumulative.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    snapshot.cumulative[i] = total;
  }
  snapshot.sum = sum_.load(std::memory_order_relaxed);
  return snapshot;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1) {
    internal::Misuse(absl::StrCat("ExponentialBuckets(", start, ", ", factor, ", ", count,
                                  "): needs start > 0, factor > 1, count >= 1"));
  }
  std::vector<double> bounds(count);
  for (int i = 0; i < count; ++i) bounds[i] = start * std::pow(factor, i);
  return bounds;
}

std::vector<double> LinearBuckets(double start, double width, int count) {
  if (!(width > 0) || count < 1) {
    internal::Misuse(absl::StrCat("LinearBuckets(", start, ", ", width, ", ", count,
                                  "): needs width > 0, count >= 1"));
  }
  std::vector<double> bounds(count);
  for (int i = 0; i < count; ++i) bounds[i] = start + width * i;
  return bounds;
}

}  // namespace arbor::metrics
