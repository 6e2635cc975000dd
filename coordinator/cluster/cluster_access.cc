#include "coordinator/cluster/cluster_access.h"

#include "rpc/internal_key.h"

namespace arbor::coordinator {
namespace {

bool HasClusterCertificate(const grpc::ServerContext& context) {
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  return auth != nullptr && auth->IsPeerAuthenticated();
}

}  // namespace

bool ClusterAccess::Internal(const grpc::ServerContext& context) const {
  if (internal_key_.empty()) return false;
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find(rpc::kInternalKeyHeader);
  return it != metadata.end() &&
         rpc::ConstantTimeEquals(internal_key_, std::string(it->second.data(), it->second.size()));
}

absl::Status ClusterAccess::Check(const grpc::ServerContext& context, Need need) const {
  if (auth_ == nullptr && !tls_) return absl::OkStatus();
  if (HasClusterCertificate(context)) return absl::OkStatus();
  if (need == Need::kRead && Internal(context)) return absl::OkStatus();
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
