#include "coordinator/cluster_access.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace arbor::coordinator {
namespace {

bool HasClusterCertificate(const grpc::ServerContext& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  return auth != nullptr && auth->IsPeerAuthenticated();
}

// The coordinator's own in-process channel (the HTTP gateway): no socket, so no stranger.
bool InProcess(const grpc::ServerContext& context) {
  return absl::StartsWith(context.peer(), "inproc");
}

}  // namespace

absl::Status ClusterAccess::Check(const grpc::ServerContext& context, Need need) const {
  if (auth_ == nullptr && !tls_) return absl::OkStatus();
  if (HasClusterCertificate(context)) return absl::OkStatus();
  if (need == Need::kRead && InProcess(context)) return absl::OkStatus();
  const char* accepted = need == Need::kAdmin
                             ? "a cluster certificate (--tls_cert signed by --tls_ca) or an "
                               "admin token"
                             : "a cluster certificate (--tls_cert signed by --tls_ca), or an "
                               "admin or worker token";
  if (auth_ == nullptr) {
    return absl::UnauthenticatedError(absl::StrCat("the Cluster API needs ", accepted));
  }
  absl::StatusOr<rpc::Identity> caller = auth_->Authenticate(context);
  if (!caller.ok()) {
    return absl::UnauthenticatedError(
        absl::StrCat(caller.status().message(), "; the Cluster API needs ", accepted));
  }
  if (caller->role == rpc::Role::kAdmin ||
      (caller->role == rpc::Role::kWorker && need != Need::kAdmin)) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("token '", caller->name, "' may not do this: the call needs ", accepted));
}

}  // namespace arbor::coordinator
