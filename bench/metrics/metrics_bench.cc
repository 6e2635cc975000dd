// What one metric update costs on the hot path — a counter increment and a histogram
// observation, as the worker's step loop and the coordinator's event translation do them —
// with Arbor's metrics library (metrics/) and with prometheus-cpp, Debian's C++ client, in the
// same run, on 1 and 2 threads updating the same series (docs/PERFORMANCE.md, "Metrics").
#include <benchmark/benchmark.h>
#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <vector>

#include "metrics/registry.h"

namespace {

const std::vector<double>& Buckets() {
  static const std::vector<double> buckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                              0.25,  0.5,    1,     2.5,  5,     10};
  return buckets;
}

// The observed values cycle through every bucket, as step times spread.
double Value(int64_t i) { return 0.0007 * static_cast<double>(1 + i % 16000); }

arbor::metrics::Registry& ArborRegistry() {
  static auto* registry = new arbor::metrics::Registry();
  return *registry;
}

prometheus::Registry& PrometheusRegistry() {
  static auto* registry = new prometheus::Registry();
  return *registry;
}

void BM_ArborCounterInc(benchmark::State& state) {
  arbor::metrics::Counter& counter =
      ArborRegistry().AddCounter("bench_counter_total", "Bench.").Get();
  for (auto _ : state) counter.Inc();
}
BENCHMARK(BM_ArborCounterInc)->Threads(1)->Threads(2);

void BM_PrometheusCppCounterInc(benchmark::State& state) {
  prometheus::Counter& counter = prometheus::BuildCounter()
                                     .Name("bench_counter_total")
                                     .Help("Bench.")
                                     .Register(PrometheusRegistry())
                                     .Add({});
  for (auto _ : state) counter.Increment();
}
BENCHMARK(BM_PrometheusCppCounterInc)->Threads(1)->Threads(2);

void BM_ArborHistogramObserve(benchmark::State& state) {
  arbor::metrics::Histogram& histogram =
      ArborRegistry().AddHistogram("bench_seconds", "Bench.", Buckets()).Get();
  int64_t i = 0;
  for (auto _ : state) histogram.Observe(Value(i++));
}
BENCHMARK(BM_ArborHistogramObserve)->Threads(1)->Threads(2);

void BM_PrometheusCppHistogramObserve(benchmark::State& state) {
  prometheus::Histogram& histogram = prometheus::BuildHistogram()
                                         .Name("bench_seconds")
                                         .Help("Bench.")
                                         .Register(PrometheusRegistry())
                                         .Add({}, Buckets());
  int64_t i = 0;
  for (auto _ : state) histogram.Observe(Value(i++));
}
BENCHMARK(BM_PrometheusCppHistogramObserve)->Threads(1)->Threads(2);

}  // namespace

BENCHMARK_MAIN();
