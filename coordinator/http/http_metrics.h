// Prometheus metrics of the HTTP gateway: every answered request by route and status code (the
// 4xx ones httplib answers itself too) and its end-to-end time, streamed responses included.
// Routes (routes.h) and codes are fixed label sets, so no request can grow the exposition.
#ifndef ARBOR_COORDINATOR_HTTP_HTTP_METRICS_H_
#define ARBOR_COORDINATOR_HTTP_HTTP_METRICS_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "metrics/registry.h"

namespace arbor::coordinator::http {

// The status label: the code when it is one dashboards tell apart, else its class ("2xx").
absl::string_view StatusLabel(int status);

class HttpMetrics {
 public:
  explicit HttpMetrics(metrics::Registry& registry);
  // One answered request; `seconds` unknown for requests httplib refused before routing.
  void Observe(absl::string_view path, int status, std::optional<double> seconds);

 private:
  metrics::Family<metrics::Counter>& requests_;
  metrics::Family<metrics::Histogram>& seconds_;
};

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_HTTP_METRICS_H_
