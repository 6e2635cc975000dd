// The value cells of one time series — Counter, Gauge, Histogram — as instrumented code holds
// them: obtained once from a family (family.h), then updated on the hot path with relaxed atomic
// operations only (no lock, no allocation, no lookup), from any number of threads.
#ifndef ARBOR_METRICS_SERIES_H_
#define ARBOR_METRICS_SERIES_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace arbor::metrics {

// Only goes up (Prometheus `counter`; a scrape sees a process restart as a reset).
class Counter {
 public:
  // Adds `amount`; negative or NaN amounts are dropped, since a counter never goes down.
  void Inc(double amount = 1.0) {
    if (amount > 0) value_.fetch_add(amount, std::memory_order_relaxed);
  }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down (Prometheus `gauge`).
class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Add(double amount) { value_.fetch_add(amount, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Counts observations into buckets fixed at registration (Prometheus `histogram`). Each
// observation increments one bucket (the first whose upper bound is >= the value, or +Inf), so
// cumulative counts, and the total, are computed when read rather than on every Observe.
class Histogram {
 public:
  struct Snapshot {
    std::vector<uint64_t> cumulative;  // Per upper bound, then +Inf: observations <= bound.
    double sum = 0.0;
    uint64_t count() const { return cumulative.empty() ? 0 : cumulative.back(); }
  };

  // `upper_bounds`: finite and strictly increasing (ValidateBuckets); shared by a family.
  explicit Histogram(std::shared_ptr<const std::vector<double>> upper_bounds);

  // NaN is dropped: it belongs to no bucket and would make the sum NaN for good.
  void Observe(double value);
  // Not one atomic picture: an Observe racing the read may show in the buckets and not yet in
  // the sum. The +Inf bucket is the count, as the exposition format requires.
  Snapshot Read() const;
  const std::vector<double>& upper_bounds() const { return *upper_bounds_; }

 private:
  std::shared_ptr<const std::vector<double>> upper_bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // upper_bounds_->size() + 1 (+Inf last).
  std::atomic<double> sum_{0.0};
};

// Bucket upper bounds start, start*factor, ..., `count` of them (start > 0, factor > 1).
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// Bucket upper bounds start, start+width, ..., `count` of them (width > 0).
std::vector<double> LinearBuckets(double start, double width, int count);

}  // namespace arbor::metrics

#endif  // ARBOR_METRICS_SERIES_H_
