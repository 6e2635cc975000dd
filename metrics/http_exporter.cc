#include "metrics/http_exporter.h"

#include <chrono>
#include <memory>

#include "metrics/http_bind.h"
#include "metrics/process_metrics.h"
#include "metrics/text_format.h"

namespace arbor::metrics {

void AddMetricsRoute(httplib::Server& server, Registry& registry) {
  auto process = std::make_shared<ProcessMetrics>(registry);
  server.Get("/metrics", [&registry, process](const httplib::Request&,
                                              httplib::Response& response) {
    process->Refresh();
    response.set_content(registry.RenderText(), kTextContentType);
  });
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(absl::string_view listen,
                                                                    Registry& registry) {
  auto server = std::unique_ptr<MetricsServer>(new MetricsServer());
  httplib::Server& http = server->server_;
  // Scrapes come every few seconds from one or two Prometheus servers.
  http.new_task_queue = [] { return new httplib::ThreadPool(2); };
  AddMetricsRoute(http, registry);
  absl::StatusOr<int> port = BindHttpServer(http, listen);
  if (!port.ok()) return port.status();
  server->port_ = *port;
  std::atomic<bool>& returned = server->returned_;
  server->thread_ = std::thread([&http, &returned] {
    http.listen_after_bind();
    returned = true;
  });
  // stop() is a no-op until the accept loop runs: wait for it, so the destructor cannot hang.
  while (!http.is_running() && !returned) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return server;
}

MetricsServer::~MetricsServer() {
  server_.stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace arbor::metrics
