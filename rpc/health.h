// Client side of grpc.health.v1: ask a server whether it is serving, or wait until it is.
#ifndef ARBOR_RPC_HEALTH_H_
#define ARBOR_RPC_HEALTH_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace arbor::rpc {

// One Check call on the whole server (service ""). Returns true for SERVING, false for
// NOT_SERVING (e.g. draining), an error when the server cannot be reached within `timeout`.
absl::StatusOr<bool> CheckServing(const std::string& address, absl::Duration timeout);

// Polls CheckServing until the server reports SERVING; DEADLINE_EXCEEDED after `timeout`.
absl::Status WaitForServing(const std::string& address, absl::Duration timeout);

}  // namespace arbor::rpc

#endif  // ARBOR_RPC_HEALTH_H_
