// Requests that do not parse answer INVALID_ARGUMENT naming the field, on every server.
//
// gRPC's callback handlers answer a request that fails to deserialize with UNIMPLEMENTED and an
// empty message, which tells a client nothing. The usual cause is a proto3 `string`
// field holding bytes that are not UTF-8: protobuf refuses the whole message while parsing and
// logs which field it was. This interceptor notices a call whose request did not deserialize
// (no message after POST_RECV_MESSAGE) and rewrites the status about to be sent: INVALID_ARGUMENT
// "<field>: is not valid UTF-8" when protobuf named a string field on this thread while parsing
// (a log handler remembers it), else INVALID_ARGUMENT "request: not a valid <message>".
#ifndef ARBOR_RPC_UNPARSABLE_REQUESTS_H_
#define ARBOR_RPC_UNPARSABLE_REQUESTS_H_

#include <grpcpp/support/server_interceptor.h>

namespace arbor::rpc {

class UnparsableRequests final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // Installs (once per process) the protobuf log handler that remembers the field.
  UnparsableRequests();

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;
};

}  // namespace arbor::rpc

#endif  // ARBOR_RPC_UNPARSABLE_REQUESTS_H_
