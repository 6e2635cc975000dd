#include "rpc/server.h"

#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "arbor/v1/generation.grpc.pb.h"
#include "arbor/v1/worker.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
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

TEST(Server, NamedHealthServicesHaveTheirOwnStatus) {
  arbor::v1::Worker::Service service;
  auto server = Server::Start("127.0.0.1:0", {&service});
  ASSERT_TRUE(server.ok());
  (*server)->SetServing("arbor.ready", false);
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  using Response = grpc::health::v1::HealthCheckResponse;
  auto check = [&](const std::string& name) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(name);
    Response response;
    const grpc::Status status = stub->Check(&context, request, &response);
    return status.ok() ? response.status() : Response::UNKNOWN;
  };
  EXPECT_EQ(check(""), Response::SERVING);
  EXPECT_EQ(check("arbor.ready"), Response::NOT_SERVING);
  // Every served service answers by its full name, as grpc_health_probe -service asks.
  EXPECT_EQ(check("arbor.v1.Worker"), Response::SERVING);
  EXPECT_EQ(check("arbor.v1.Generation"), Response::UNKNOWN);  // Not served: NOT_FOUND.
  (*server)->SetServing(false);
  EXPECT_EQ(check("arbor.v1.Worker"), Response::NOT_SERVING);
  EXPECT_EQ(check(""), Response::NOT_SERVING);
}

// Submit accepts anything that parses.
class AcceptingGeneration final : public arbor::v1::Generation::CallbackService {
  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* context,
                                   const arbor::v1::GenerateRequest*, arbor::v1::JobRef*) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// A request that does not parse (a string field that is not UTF-8, or no message at all) is
// INVALID_ARGUMENT naming the field, not gRPC's UNIMPLEMENTED with no message.
TEST(Server, UnparsableRequestsAreInvalidArgumentNamingTheField) {
  AcceptingGeneration service;
  auto server = Server::Start("127.0.0.1:0", {&service});
  ASSERT_TRUE(server.ok());
  auto channel = grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials());
  auto stub = arbor::v1::Generation::NewStub(channel);
  arbor::v1::GenerateRequest request;
  arbor::v1::JobRef ref;
  {
    grpc::ClientContext context;
    request.set_text("fine");
    EXPECT_TRUE(stub->Submit(&context, request, &ref).ok());
  }
  grpc::ClientContext context;
  request.set_text("\xff\xfe");
  const grpc::Status status = stub->Submit(&context, request, &ref);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "arbor.v1.GenerateRequest.text: is not valid UTF-8 (every string field must be)");

  // Bytes that are no message at all.
  grpc::GenericStub generic(channel);
  grpc::ClientContext raw_context;
  const grpc::Slice junk("\xff\xff\xff", 3);
  grpc::ByteBuffer input(&junk, 1), output;
  grpc::Status raw_status;
  absl::Notification done;
  generic.UnaryCall(&raw_context, "/arbor.v1.Generation/Submit", grpc::StubOptions(), &input,
                    &output, [&](grpc::Status s) {
                      raw_status = std::move(s);
                      done.Notify();
                    });
  done.WaitForNotification();
  EXPECT_EQ(raw_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(raw_status.error_message(),
            "request: not a valid request message for /arbor.v1.Generation/Submit");
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
