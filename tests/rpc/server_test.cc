#include "rpc/server.h"

#include <gtest/gtest.h>

#include "arbor/v1/worker.grpc.pb.h"
#include "rpc/health.h"

namespace arbor::rpc {
namespace {

TEST(Server, ServesHealthOnAFreePortAndStopsServingOnDrain) {
  arbor::v1::Worker::Service service;
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start("127.0.0.1:0", {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  EXPECT_EQ((*server)->address(), "127.0.0.1:" + std::to_string((*server)->port()));
  EXPECT_TRUE(WaitForServing((*server)->address(), absl::Seconds(10)).ok());

  (*server)->SetServing(false);
  absl::StatusOr<bool> serving = CheckServing((*server)->address(), absl::Seconds(5));
  ASSERT_TRUE(serving.ok()) << serving.status();
  EXPECT_FALSE(*serving);
}

TEST(Server, UnimplementedMethodsSayUnimplemented) {
  arbor::v1::Worker::Service service;
  auto server = Server::Start("127.0.0.1:0", {&service});
  ASSERT_TRUE(server.ok());
  auto stub = arbor::v1::Worker::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  arbor::v1::WorkerInfo info;
  EXPECT_EQ(stub->Info(&context, {}, &info).error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

TEST(Server, BadAddressIsUnavailable) {
  arbor::v1::Worker::Service service;
  auto server = Server::Start("not an address", {&service});
  EXPECT_EQ(server.status().code(), absl::StatusCode::kUnavailable);
}

TEST(Server, UnreachableServerIsAnError) {
  EXPECT_FALSE(CheckServing("127.0.0.1:1", absl::Milliseconds(300)).ok());
}

TEST(WithPort, ReplacesPort) {
  EXPECT_EQ(WithPort("127.0.0.1:0", 5), "127.0.0.1:5");
  EXPECT_EQ(WithPort("[::1]:0", 7), "[::1]:7");
  EXPECT_EQ(WithPort("localhost", 9), "localhost:9");
}

}  // namespace
}  // namespace arbor::rpc
