// The gateway's request metrics: every path maps to one of a fixed set of routes, every status
// to a fixed label, so no request grows the exposition; an observation lands in its series.
#include "coordinator/http/http_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "coordinator/http/routes.h"
#include "metrics/registry.h"
#include "tests/support/metric_samples.h"

namespace arbor::coordinator::http {
namespace {

using metrics::testing::SampleValue;

TEST(HttpMetricsTest, PathsMapToTheirRoutePatterns) {
  EXPECT_EQ(RouteOf("/v1/chat/completions"), "/v1/chat/completions");
  EXPECT_EQ(RouteOf("/v1/jobs"), "/v1/jobs");
  EXPECT_EQ(RouteOf("/v1/jobs?state=running"), "/v1/jobs");
  EXPECT_EQ(RouteOf("/v1/jobs/abc123"), "/v1/jobs/{id}");
  EXPECT_EQ(RouteOf("/v1/jobs/abc123/tree"), "/v1/jobs/{id}/tree");
  EXPECT_EQ(RouteOf("/v1/jobs/abc123/replay"), "/v1/jobs/{id}/replay");
  EXPECT_EQ(RouteOf("/v1/jobs/abc123/events"), "/v1/jobs/{id}/events");
  EXPECT_EQ(RouteOf("/v1/jobs/abc123/nope"), "other");
  EXPECT_EQ(RouteOf("/v1/jobs//tree"), "other");
  EXPECT_EQ(RouteOf("/ui/app.js"), "/ui");
  EXPECT_EQ(RouteOf("/"), "/");
  EXPECT_EQ(RouteOf("/metrics"), "/metrics");
  EXPECT_EQ(RouteOf("/tokenize"), "/tokenize");
  EXPECT_EQ(RouteOf("/detokenize?x=1"), "/detokenize");
  EXPECT_EQ(RouteOf("/wp-admin/setup.php"), "other");
  EXPECT_EQ(RouteOf(""), "other");
  EXPECT_EQ(RouteOf("/ui/palette.json"), "/ui");
  EXPECT_EQ(RouteOf("/ui/a/b"), "other");
}

// Each route's label is in the fixed set, and the pattern served for it is labelled with it.
TEST(HttpMetricsTest, EveryRouteIsLabelledByItsOwnPattern) {
  const std::vector<std::string>& labels = RouteLabels();
  EXPECT_EQ(labels.back(), "other");
  for (const Route& route : Routes()) {
    EXPECT_NE(std::find(labels.begin(), labels.end(), route.label), labels.end()) << route.label;
    EXPECT_EQ(std::string(PatternOf(route.id)), route.pattern);
  }
}

TEST(HttpMetricsTest, StatusesKeepCommonCodesAndClassTheRest) {
  EXPECT_EQ(StatusLabel(200), "200");
  EXPECT_EQ(StatusLabel(404), "404");
  EXPECT_EQ(StatusLabel(429), "429");
  EXPECT_EQ(StatusLabel(204), "2xx");
  EXPECT_EQ(StatusLabel(101), "1xx");
  EXPECT_EQ(StatusLabel(302), "3xx");
  EXPECT_EQ(StatusLabel(418), "4xx");
  EXPECT_EQ(StatusLabel(502), "5xx");
  EXPECT_EQ(StatusLabel(-1), "5xx");
  EXPECT_EQ(StatusLabel(700), "5xx");
}

TEST(HttpMetricsTest, ObservationsLandInTheirSeries) {
  metrics::Registry registry;
  HttpMetrics metrics(registry);
  metrics.Observe("/v1/jobs/x", 404, 0.02);
  metrics.Observe("/v1/jobs/y", 404, 0.03);
  metrics.Observe("/nowhere", 414, std::nullopt);  // Refused before routing: no time.
  const std::string text = registry.RenderText();
  EXPECT_EQ(SampleValue(text, R"(arbor_http_requests_total{route="/v1/jobs/{id}",code="404"})"), 2);
  EXPECT_EQ(SampleValue(text, R"(arbor_http_requests_total{route="other",code="414"})"), 1);
  EXPECT_EQ(SampleValue(text, R"(arbor_http_request_seconds_count{route="/v1/jobs/{id}"})"), 2);
  EXPECT_NEAR(SampleValue(text, R"(arbor_http_request_seconds_sum{route="/v1/jobs/{id}"})"), 0.05,
              1e-12);
  EXPECT_EQ(text.find(R"(arbor_http_request_seconds_count{route="other"})"), std::string::npos)
      << "no time, no observation";
}

}  // namespace
}  // namespace arbor::coordinator::http
