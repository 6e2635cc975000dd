// The one place where Arbor's errors (absl::Status) cross into gRPC and back.
//
// Every library returns absl::Status; services convert at the RPC boundary with ToGrpcStatus,
// clients convert what they receive with FromGrpcStatus, so a precise error (code and message
// naming the field) survives any number of hops.
#ifndef ARBOR_RPC_GRPC_STATUS_H_
#define ARBOR_RPC_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace arbor::rpc {

// Same code (the enums share numbering) and message; payloads are not carried.
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace arbor::rpc

#endif  // ARBOR_RPC_GRPC_STATUS_H_
