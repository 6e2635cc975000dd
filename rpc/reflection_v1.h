// Server reflection v1 (grpc.reflection.v1.ServerReflection), beside the v1alpha service the
// gRPC release ships: tools that ask for v1 first (grpcurl) list and describe Arbor's services
// without the .proto files. Answers from the protobuf descriptors linked into the process; the
// services it lists are the ones the server registered (rpc/server.h hands it their names).
#ifndef ARBOR_RPC_REFLECTION_V1_H_
#define ARBOR_RPC_REFLECTION_V1_H_

#include <string>
#include <vector>

#include "grpc/reflection/v1/reflection.grpc.pb.h"

namespace arbor::rpc {

class ReflectionV1 final : public grpc::reflection::v1::ServerReflection::Service {
 public:
  // `services` (full names) is read when clients ask; it must outlive this service.
  explicit ReflectionV1(const std::vector<std::string>* services) : services_(services) {}

  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::reflection::v1::ServerReflectionResponse,
                               grpc::reflection::v1::ServerReflectionRequest>* stream) override;

 private:
  const std::vector<std::string>* services_;
};

}  // namespace arbor::rpc

#endif  // ARBOR_RPC_REFLECTION_V1_H_
