#include "coordinator/http/http_metrics.h"

#include <string>
#include <vector>

#include "coordinator/http/routes.h"

namespace arbor::coordinator::http {
namespace {

const std::vector<std::string>& Statuses() {
  static const auto* statuses =
      new std::vector<std::string>{"200", "400", "401", "403", "404", "405", "413", "414",
                                   "429", "500", "503", "1xx", "2xx", "3xx", "4xx", "5xx"};
  return *statuses;
}

}  // namespace

absl::string_view StatusLabel(int status) {
  const std::string code = std::to_string(status);
  for (const std::string& label : Statuses()) {
    if (label == code) return label;
  }
  if (status < 100 || status > 599) return "5xx";    // Not HTTP: count it as a server fault.
  const size_t first_class = Statuses().size() - 5;  // "1xx".
  return Statuses()[first_class + static_cast<size_t>(status / 100 - 1)];
}

HttpMetrics::HttpMetrics(metrics::Registry& registry)
    : requests_(registry.AddCounter("arbor_http_requests_total",
                                    "HTTP requests answered, by route and status code.",
                                    {{"route", RouteLabels()}, {"code", Statuses()}})),
      seconds_(registry.AddHistogram(
          "arbor_http_request_seconds",
          "Time from routing an HTTP request to the end of its response (a stream's last "
          "event included), by route.",
          {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
          {{"route", RouteLabels()}})) {}

void HttpMetrics::Observe(absl::string_view path, int status, std::optional<double> seconds) {
  const absl::string_view route = RouteOf(path);
  requests_.WithLabels({route, StatusLabel(status)}).Inc();
  if (seconds) seconds_.WithLabels({route}).Observe(*seconds);
}

}  // namespace arbor::coordinator::http
