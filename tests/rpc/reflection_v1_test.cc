// Server reflection v1 on a real server: the services it registered are listed, a symbol's file
// comes back with the files it depends on (each once per stream), and unknown names get a
// NOT_FOUND error response on an otherwise healthy stream.
#include "rpc/reflection_v1.h"

#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "arbor/v1/worker.grpc.pb.h"
#include "rpc/server.h"

namespace arbor::rpc {
namespace {

using grpc::reflection::v1::ServerReflection;
using grpc::reflection::v1::ServerReflectionRequest;
using grpc::reflection::v1::ServerReflectionResponse;

// The names of the files a file-descriptor response carries, in order.
std::vector<std::string> FileNames(const ServerReflectionResponse& response) {
  std::vector<std::string> names;
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    EXPECT_TRUE(file.ParseFromString(bytes));
    names.push_back(file.name());
  }
  return names;
}

TEST(ReflectionV1, ListsServicesAndDescribesThem) {
  arbor::v1::Worker::Service service;
  auto server = Server::Start("127.0.0.1:0", {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = ServerReflection::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto stream = stub->ServerReflectionInfo(&context);
  auto ask = [&](const ServerReflectionRequest& request) {
    EXPECT_TRUE(stream->Write(request));
    ServerReflectionResponse response;
    EXPECT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.original_request().SerializeAsString(), request.SerializeAsString());
    return response;
  };

  ServerReflectionRequest list;
  list.set_list_services("");
  const ServerReflectionResponse listed = ask(list);
  std::vector<std::string> services;
  for (const auto& s : listed.list_services_response().service()) services.push_back(s.name());
  for (const char* name :
       {"arbor.v1.Worker", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection"}) {
    EXPECT_NE(std::find(services.begin(), services.end(), name), services.end()) << name;
  }
  EXPECT_EQ(std::find(services.begin(), services.end(), "arbor.v1.Generation"), services.end());

  ServerReflectionRequest symbol;
  symbol.set_file_containing_symbol("arbor.v1.Worker");
  const std::vector<std::string> first = FileNames(ask(symbol));
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first[0], "arbor/v1/worker.proto");
  EXPECT_NE(std::find(first.begin(), first.end(), "arbor/v1/entropix.proto"), first.end());
  // Asked again on the same stream: the file itself, its dependencies already sent.
  EXPECT_EQ(FileNames(ask(symbol)), std::vector<std::string>{"arbor/v1/worker.proto"});

  ServerReflectionRequest by_name;
  by_name.set_file_by_filename("arbor/v1/entropix.proto");
  EXPECT_EQ(FileNames(ask(by_name)).at(0), "arbor/v1/entropix.proto");

  ServerReflectionRequest unknown;
  unknown.set_file_containing_symbol("arbor.v1.NoSuchThing");
  const ServerReflectionResponse refused = ask(unknown);
  EXPECT_EQ(refused.error_response().error_code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_NE(refused.error_response().error_message().find("arbor.v1.NoSuchThing"),
            std::string::npos);
  EXPECT_TRUE(stream->WritesDone());
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace arbor::rpc
