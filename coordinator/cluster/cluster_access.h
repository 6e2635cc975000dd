// Who may use the Cluster API (docs/SECURITY.md). Workers register through it and admins drain
// through it, so a stranger who could call it could pose as a worker and receive other users'
// prompts, or take every real worker out of rotation.
//
// Allowed: a peer that presented a certificate signed by the cluster's CA (mutual TLS: workers,
// coordinators, admin tools); an admin token; a worker token for what a worker does (register,
// heartbeat, leave, list); the coordinator's own HTTP gateway for the worker list behind
// /health, which proves it is in-process with a random key that never leaves the process (an
// in-process call has no peer address to tell it by). A server with neither TLS nor tokens is
// open (it listens on loopback only).
#ifndef ARBOR_COORDINATOR_CLUSTER_CLUSTER_ACCESS_H_
#define ARBOR_COORDINATOR_CLUSTER_CLUSTER_ACCESS_H_

#include <grpcpp/grpcpp.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "rpc/tokens.h"

namespace arbor::coordinator {

class ClusterAccess {
 public:
  enum class Need {
    kRead,    // ListWorkers.
    kWorker,  // RegisterWorker, Heartbeat, DeregisterWorker.
    kAdmin,   // DrainWorker, UndrainWorker.
  };

  // Open: every call is allowed.
  ClusterAccess() = default;
  // `auth` (may be null: no tokens) must outlive this; `tls`: the server asks for certificates;
  // `internal_key`: what the process's own gateway sends (rpc/internal_key.h) (empty: none).
  ClusterAccess(const rpc::Authenticator* auth, bool tls, std::string internal_key)
      : auth_(auth), tls_(tls), internal_key_(std::move(internal_key)) {}

  // OK, UNAUTHENTICATED (no or a bad token) or PERMISSION_DENIED (a user's token, or a worker's
  // for an admin call); the message says what would be accepted.
  absl::Status Check(const grpc::ServerContext& context, Need need) const;

 private:
  bool Internal(const grpc::ServerContext& context) const;

  const rpc::Authenticator* auth_ = nullptr;
  bool tls_ = false;
  std::string internal_key_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_CLUSTER_CLUSTER_ACCESS_H_
