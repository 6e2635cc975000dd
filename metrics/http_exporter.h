// Serving a registry to Prometheus over HTTP: GET /metrics answers the text exposition format.
// A process that already runs an HTTP server adds the route to it (AddMetricsRoute); one that
// has none (the worker) runs a MetricsServer of its own on a separate port.
#ifndef ARBOR_METRICS_HTTP_EXPORTER_H_
#define ARBOR_METRICS_HTTP_EXPORTER_H_

#include <atomic>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "httplib.h"
#include "metrics/registry.h"

namespace arbor::metrics {

// Answers GET /metrics on `server` with `registry` rendered, Content-Type kTextContentType, the
// process_* metrics (process_metrics.h) refreshed first. `registry` must outlive the server.
void AddMetricsRoute(httplib::Server& server, Registry& registry);

// An HTTP server that serves only /metrics, on a thread of its own.
class MetricsServer {
 public:
  // Binds `listen` ("host:port"; port 0 picks a free port) and serves until destroyed.
  // INVALID_ARGUMENT for a malformed address, UNAVAILABLE when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(absl::string_view listen,
                                                              Registry& registry);
  ~MetricsServer();  // Stops serving and joins the thread.
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }

 private:
  MetricsServer() = default;

  httplib::Server server_;
  int port_ = 0;
  std::atomic<bool> returned_{false};  // The accept loop ended (or never started).
  std::thread thread_;
};

}  // namespace arbor::metrics

#endif  // ARBOR_METRICS_HTTP_EXPORTER_H_
