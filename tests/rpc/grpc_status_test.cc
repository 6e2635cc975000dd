#include "rpc/grpc_status.h"

#include <gtest/gtest.h>

namespace arbor::rpc {
namespace {

TEST(GrpcStatus, EveryCanonicalCodeRoundTrips) {
  for (int code = 0; code <= 16; ++code) {
    const absl::Status original(static_cast<absl::StatusCode>(code),
                                code == 0 ? "" : "field 'x': out of range");
    const grpc::Status wire = ToGrpcStatus(original);
    EXPECT_EQ(static_cast<int>(wire.error_code()), code);
    const absl::Status back = FromGrpcStatus(wire);
    EXPECT_EQ(back, original) << "code " << code;
  }
}

TEST(GrpcStatus, KeepsMessage) {
  grpc::Status wire = ToGrpcStatus(absl::InvalidArgumentError("max_tokens: must be in [1, 2048]"));
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(wire.error_message(), "max_tokens: must be in [1, 2048]");
}

TEST(GrpcStatus, NonCanonicalCodesBecomeUnknown) {
  const absl::Status odd(static_cast<absl::StatusCode>(42), "custom");
  EXPECT_EQ(ToGrpcStatus(odd).error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(ToGrpcStatus(odd).error_message(), "custom");
  const grpc::Status wire(static_cast<grpc::StatusCode>(99), "from elsewhere");
  EXPECT_EQ(FromGrpcStatus(wire).code(), absl::StatusCode::kUnknown);
}

}  // namespace
}  // namespace arbor::rpc
