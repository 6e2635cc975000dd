// Every call a Server answers is counted by method and status code (request_metrics.h).
#include "rpc/request_metrics.h"

#include <gtest/gtest.h>

#include <string>

#include "arbor/v1/worker.grpc.pb.h"
#include "metrics/registry.h"
#include "rpc/health.h"
#include "rpc/server.h"
#include "tests/support/metric_samples.h"

namespace arbor::rpc {
namespace {

using metrics::testing::SampleValue;

constexpr char kInfo[] =
    "arbor_grpc_server_handled_total{method=\"arbor.v1.Worker/Info\",code=\"UNIMPLEMENTED\"}";
constexpr char kCheck[] =
    "arbor_grpc_server_handled_total{method=\"grpc.health.v1.Health/Check\",code=\"OK\"}";

TEST(RequestMetrics, CountsEveryCallByMethodAndCode) {
  arbor::v1::Worker::Service service;  // Every method answers UNIMPLEMENTED.
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start("127.0.0.1:0", {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = arbor::v1::Worker::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  auto call_info = [&] {
    grpc::ClientContext context;
    arbor::v1::WorkerInfo info;
    EXPECT_EQ(stub->Info(&context, {}, &info).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  };
  auto check_health = [&] {
    absl::StatusOr<bool> serving = CheckServing((*server)->address(), absl::Seconds(10));
    ASSERT_TRUE(serving.ok()) << serving.status();
  };
  // Once each first: the process's registry shows a series from its first use on.
  call_info();
  check_health();
  const std::string before = metrics::DefaultRegistry().RenderText();
  call_info();
  call_info();
  check_health();
  // Counted before the status is sent, so before the client has it.
  const std::string after = metrics::DefaultRegistry().RenderText();
  EXPECT_EQ(SampleValue(after, kInfo) - SampleValue(before, kInfo), 2);
  EXPECT_EQ(SampleValue(after, kCheck) - SampleValue(before, kCheck), 1);
}

}  // namespace
}  // namespace arbor::rpc
