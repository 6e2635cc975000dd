// The registry's text exposition, checked line by line against the format's rules: headers,
// escaping, cumulative histogram buckets, bounded labels; and exact totals under concurrency.
#include "metrics/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "metrics/text_format.h"

namespace arbor::metrics {
namespace {

TEST(RegistryTest, RendersCounterAndGaugeSortedByName) {
  Registry registry;
  registry.AddGauge("zeta_jobs", "Jobs running.").Get().Set(3);
  Family<Counter>& requests = registry.AddCounter("alpha_requests_total", "Requests by method.",
                                                  {{"method", {"Run", "Info"}}});
  requests.WithLabels({"Info"}).Inc();
  requests.WithLabels({"Run"}).Inc(2.5);
  EXPECT_EQ(registry.RenderText(),
            "# HELP alpha_requests_total Requests by method.\n"
            "# TYPE alpha_requests_total counter\n"
            "alpha_requests_total{method=\"Run\"} 2.5\n"
            "alpha_requests_total{method=\"Info\"} 1\n"
            "# HELP zeta_jobs Jobs running.\n"
            "# TYPE zeta_jobs gauge\n"
            "zeta_jobs 3\n");
}

TEST(RegistryTest, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Registry registry;
  Histogram& h = registry.AddHistogram("step_seconds", "Step time.", {0.125, 1, 10}).Get();
  for (double v : {0.0625, 0.125, 0.5, 3.0, 100.0}) h.Observe(v);
  h.Observe(std::nan(""));  // Dropped.
  EXPECT_EQ(registry.RenderText(),
            "# HELP step_seconds Step time.\n"
            "# TYPE step_seconds histogram\n"
            "step_seconds_bucket{le=\"0.125\"} 2\n"  // A bound's own value falls in it.
            "step_seconds_bucket{le=\"1\"} 3\n"
            "step_seconds_bucket{le=\"10\"} 4\n"
            "step_seconds_bucket{le=\"+Inf\"} 5\n"
            "step_seconds_sum 103.6875\n"
            "step_seconds_count 5\n");
}

TEST(RegistryTest, LabelledHistogramPutsLeLast) {
  Registry registry;
  registry.AddHistogram("rows", "Rows.", {1}, {{"kind", {"decode"}}})
      .WithLabels({"decode"})
      .Observe(1);
  EXPECT_THAT(registry.RenderText(),
              testing::HasSubstr("rows_bucket{kind=\"decode\",le=\"1\"} 1\n"
                                 "rows_bucket{kind=\"decode\",le=\"+Inf\"} 1\n"
                                 "rows_sum{kind=\"decode\"} 1\n"
                                 "rows_count{kind=\"decode\"} 1\n"));
}

TEST(RegistryTest, EscapesHelpAndLabelValues) {
  Registry registry;
  const std::string odd = "a\\b\"c\nd";
  registry.AddCounter("odd_total", "Help with \\ and\nnewline and \"quotes\".", {{"v", {odd}}})
      .WithLabels({odd})
      .Inc();
  EXPECT_EQ(registry.RenderText(),
            "# HELP odd_total Help with \\\\ and\\nnewline and \"quotes\".\n"
            "# TYPE odd_total counter\n"
            "odd_total{v=\"a\\\\b\\\"c\\nd\"} 1\n");
}

TEST(RegistryTest, UndeclaredValuesFoldIntoOther) {
  Registry registry;
  Family<Counter>& family =
      registry.AddCounter("codes_total", "By code.", {{"code", {"OK", "UNAVAILABLE"}}});
  family.WithLabels({"NOT_A_CODE"}).Inc();
  family.WithLabels({"ALSO_NOT"}).Inc();
  family.WithLabels({"OK"}).Inc();
  EXPECT_EQ(&family.WithLabels({"NOT_A_CODE"}), &family.WithLabels({kOtherLabelValue}));
  EXPECT_EQ(registry.RenderText(),
            "# HELP codes_total By code.\n"
            "# TYPE codes_total counter\n"
            "codes_total{code=\"OK\"} 1\n"
            "codes_total{code=\"other\"} 2\n");
}

TEST(RegistryTest, SeriesOfSeveralLabelsRenderInDeclarationOrder) {
  Registry registry;
  Family<Gauge>& family =
      registry.AddGauge("blocks", "Blocks.", {{"pool", {"k", "v"}}, {"state", {"used", "free"}}});
  family.WithLabels({"v", "free"}).Set(4);
  family.WithLabels({"k", "free"}).Set(2);
  family.WithLabels({"k", "used"}).Set(1);
  EXPECT_EQ(registry.RenderText(),
            "# HELP blocks Blocks.\n"
            "# TYPE blocks gauge\n"
            "blocks{pool=\"k\",state=\"used\"} 1\n"
            "blocks{pool=\"k\",state=\"free\"} 2\n"
            "blocks{pool=\"v\",state=\"free\"} 4\n");
}

TEST(RegistryTest, RegisteringTheSameDefinitionTwiceSharesTheFamily) {
  Registry registry;
  Counter& a = registry.AddCounter("same_total", "Same.").Get();
  Counter& b = registry.AddCounter("same_total", "Same.").Get();
  EXPECT_EQ(&a, &b);
  a.Inc();
  b.Inc();
  EXPECT_EQ(a.Value(), 2);
}

TEST(RegistryTest, CountersNeverGoDown) {
  Counter counter;
  counter.Inc(2);
  counter.Inc(-1);
  counter.Inc(std::nan(""));
  EXPECT_EQ(counter.Value(), 2);
}

TEST(RegistryTest, SpecialValuesAreSpelledAsPrometheusReadsThem) {
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(-2), "-2");
  EXPECT_EQ(FormatValue(1e21), "1e+21");
}

TEST(RegistryTest, BucketHelpers) {
  EXPECT_THAT(ExponentialBuckets(1, 2, 4), testing::ElementsAre(1, 2, 4, 8));
  EXPECT_THAT(LinearBuckets(0.5, 1, 3), testing::ElementsAre(0.5, 1.5, 2.5));
}

TEST(RegistryTest, ConcurrentUpdatesLoseNothing) {
  Registry registry;
  Family<Counter>& counters = registry.AddCounter("c_total", "C.", {{"t", {"a", "b"}}});
  Gauge& gauge = registry.AddGauge("g", "G.").Get();
  Histogram& histogram = registry.AddHistogram("h", "H.", {0.5}).Get();
  constexpr int kThreads = 8;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Half the threads take their handle once, half look it up every time.
      Counter& mine = counters.WithLabels({t % 2 == 0 ? "a" : "b"});
      for (int i = 0; i < kPerThread; ++i) {
        if (t < kThreads / 2) {
          mine.Inc();
        } else {
          counters.WithLabels({t % 2 == 0 ? "a" : "b"}).Inc();
        }
        gauge.Add(1);
        gauge.Add(-1);
        histogram.Observe(i % 2 == 0 ? 0.25 : 1.0);
      }
      registry.RenderText();  // Scrapes race the updates.
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counters.WithLabels({"a"}).Value(), kThreads / 2 * kPerThread);
  EXPECT_EQ(counters.WithLabels({"b"}).Value(), kThreads / 2 * kPerThread);
  EXPECT_EQ(gauge.Value(), 0);
  const Histogram::Snapshot snapshot = histogram.Read();
  EXPECT_EQ(snapshot.count(), uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(snapshot.cumulative[0], uint64_t{kThreads} * kPerThread / 2);
  EXPECT_EQ(snapshot.sum, kThreads * kPerThread / 2 * 1.25);
}

TEST(RegistryDeathTest, MisuseAbortsNamingTheProblem) {
  Registry registry;
  registry.AddCounter("x_total", "X.");
  EXPECT_DEATH(registry.AddCounter("x_total", "Other help."), "registered as");
  EXPECT_DEATH(registry.AddCounter("no_suffix", "X."), "must end in _total");
  EXPECT_DEATH(registry.AddGauge("bad-name", "X."), "not a metric name");
  EXPECT_DEATH(registry.AddGauge("g", "X.", {{"__reserved", {"a"}}}), "not a label name");
  EXPECT_DEATH(registry.AddHistogram("h", "X.", {2, 1}), "strictly increasing");
  EXPECT_DEATH(registry.AddHistogram("h", "X.", {1}, {{"le", {"a"}}}), "names the buckets");
  Family<Gauge>& g = registry.AddGauge("two", "X.", {{"a", {"1"}}, {"b", {"1"}}});
  EXPECT_DEATH(g.WithLabels({"1"}), "1 label values for 2 labels");
}

}  // namespace
}  // namespace arbor::metrics
