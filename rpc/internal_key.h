// The key with which a process's own in-process callers (the coordinator's HTTP gateway calling
// its gRPC services) prove where they are: an in-process call has no peer address to tell it
// by, so the process draws a random key at start, keeps it in memory only and sends it as
// metadata; the services compare it in constant time.
#ifndef ARBOR_RPC_INTERNAL_KEY_H_
#define ARBOR_RPC_INTERNAL_KEY_H_

#include <string>

namespace arbor::rpc {

// The metadata key under which an in-process caller sends the internal key.
inline constexpr char kInternalKeyHeader[] = "x-arbor-internal-key";

// A fresh random key (64 hex digits), from the operating system's secure generator.
std::string NewInternalKey();

}  // namespace arbor::rpc

#endif  // ARBOR_RPC_INTERNAL_KEY_H_
