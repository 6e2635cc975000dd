// /metrics over real HTTP on loopback: the standalone MetricsServer and the route added to a
// server someone else runs.
#include "metrics/http_exporter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "httplib.h"
#include "metrics/text_format.h"

namespace arbor::metrics {
namespace {

TEST(MetricsServerTest, ServesTheRegistryWithTheExpositionContentType) {
  Registry registry;
  Counter& counter = registry.AddCounter("served_total", "Served.").Get();
  absl::StatusOr<std::unique_ptr<MetricsServer>> server =
      MetricsServer::Start("127.0.0.1:0", registry);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  httplib::Client client("127.0.0.1", (*server)->port());
  counter.Inc(7);
  httplib::Result result = client.Get("/metrics");
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(result->get_header_value("Content-Type"), kTextContentType);
  EXPECT_THAT(result->body, testing::HasSubstr("served_total 7\n"));
  EXPECT_THAT(result->body, testing::HasSubstr("process_resident_memory_bytes "))
      << "a scrape refreshes the process metrics";
  EXPECT_EQ(client.Get("/other")->status, 404);
}

TEST(MetricsServerTest, RefusesBadOrBusyAddresses) {
  Registry registry;
  EXPECT_EQ(MetricsServer::Start("no-port", registry).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::unique_ptr<MetricsServer>> first =
      MetricsServer::Start("127.0.0.1:0", registry);
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  EXPECT_EQ(MetricsServer::Start(taken, registry).status().code(), absl::StatusCode::kUnavailable);
}

TEST(AddMetricsRouteTest, AddsMetricsToAnotherServer) {
  Registry registry;
  registry.AddGauge("up", "Up.").Get().Set(1);
  httplib::Server server;
  server.Get("/health", [](const httplib::Request&, httplib::Response& r) {
    r.set_content("ok", "text/plain");
  });
  AddMetricsRoute(server, registry);
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread thread([&] { server.listen_after_bind(); });
  httplib::Client client("127.0.0.1", port);
  // The accept loop starts on its thread; the port is bound already, so a request waits for it.
  httplib::Result result = client.Get("/metrics");
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_THAT(result->body, testing::HasSubstr("# HELP up Up.\n# TYPE up gauge\nup 1\n"));
  EXPECT_EQ(client.Get("/health")->body, "ok");
  server.stop();
  thread.join();
}

}  // namespace
}  // namespace arbor::metrics
