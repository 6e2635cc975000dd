#include "coordinator/http/http_metrics.h"

#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace arbor::coordinator::http {
namespace {

// Paths that are routes as they are; the others are patterns RouteOf matches by hand.
constexpr absl::string_view kExactRoutes[] = {"/v1/chat/completions", "/v1/completions",
                                              "/v1/models",           "/v1/jobs",
                                              "/health",              "/metrics",
                                              "/"};

const std::vector<std::string>& Routes() {
  static const auto* routes = [] {
    auto* all = new std::vector<std::string>(std::begin(kExactRoutes), std::end(kExactRoutes));
    all->insert(all->end(),
                {"/v1/jobs/{id}", "/v1/jobs/{id}/tree", "/v1/jobs/{id}/replay", "/ui", "other"});
    return all;
  }();
  return *routes;
}

const std::vector<std::string>& Statuses() {
  static const auto* statuses = new std::vector<std::string>{
      "200", "400", "401", "403", "404", "405", "413", "414", "429", "500", "503",
      "1xx", "2xx", "3xx", "4xx", "5xx"};
  return *statuses;
}

}  // namespace

absl::string_view RouteOf(absl::string_view path) {
  const size_t query = path.find('?');
  if (query != absl::string_view::npos) path = path.substr(0, query);
  for (absl::string_view exact : kExactRoutes) {
    if (path == exact) return exact;
  }
  if (path == "/ui" || absl::StartsWith(path, "/ui/")) return "/ui";
  if (absl::ConsumePrefix(&path, "/v1/jobs/")) {
    const std::vector<absl::string_view> parts = absl::StrSplit(path, '/');
    if (parts.size() == 1 && !parts[0].empty()) return "/v1/jobs/{id}";
    if (parts.size() == 2 && !parts[0].empty() && parts[1] == "tree") return "/v1/jobs/{id}/tree";
    if (parts.size() == 2 && !parts[0].empty() && parts[1] == "replay") {
      return "/v1/jobs/{id}/replay";
    }
  }
  return "other";
}

absl::string_view StatusLabel(int status) {
  const std::string code = std::to_string(status);
  for (const std::string& label : Statuses()) {
    if (label == code) return label;
  }
  if (status < 100 || status > 599) return "5xx";  // Not HTTP: count it as a server fault.
  const size_t first_class = Statuses().size() - 5;  // "1xx".
  return Statuses()[first_class + static_cast<size_t>(status / 100 - 1)];
}

HttpMetrics::HttpMetrics(metrics::Registry& registry)
    : requests_(registry.AddCounter("arbor_http_requests_total",
                                    "HTTP requests answered, by route and status code.",
                                    {{"route", Routes()}, {"code", Statuses()}})),
      seconds_(registry.AddHistogram(
          "arbor_http_request_seconds",
          "Time from routing an HTTP request to the end of its response (a stream's last "
          "event included), by route.",
          {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
          {{"route", Routes()}})) {}

void HttpMetrics::Observe(absl::string_view path, int status, std::optional<double> seconds) {
  const absl::string_view route = RouteOf(path);
  requests_.WithLabels({route, StatusLabel(status)}).Inc();
  if (seconds) seconds_.WithLabels({route}).Observe(*seconds);
}

}  // namespace arbor::coordinator::http
