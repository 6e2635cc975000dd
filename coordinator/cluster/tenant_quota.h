// Per-tenant fair sharing: each tenant (a token file name, rpc/tokens.h) may have at most its
// `jobs=` jobs in flight and at most its `rows=` rows among them (a job's rows are what its
// policy may run at once on a worker, entropix::PolicyConfig::RowsInFlight). A job is counted
// from before it is created until it ends, however it ends, so a request past a limit is refused
// before it costs anything and one tenant cannot fill the server-wide admission (admission.h)
// that the others share. Tenants without limits are counted but never refused. It counts the
// refusals per tenant (docs/API.md).
#ifndef ARBOR_COORDINATOR_CLUSTER_TENANT_QUOTA_H_
#define ARBOR_COORDINATOR_CLUSTER_TENANT_QUOTA_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "metrics/registry.h"
#include "rpc/tokens.h"

namespace arbor::coordinator {

// Jobs and their rows: what a tenant has in flight, or what a request asks for.
struct TenantUse {
  int jobs = 0;
  int rows = 0;

  bool operator==(const TenantUse&) const = default;
};

// Thread-safe. Jobs are identified by their id.
class TenantQuota {
 public:
  // `tenants` are the values of the refusal counter's `tenant` label: the token file's names at
  // start (a label's values are fixed at registration, so names a reload adds count as "other").
  // `registry` must outlive this.
  explicit TenantQuota(std::vector<std::string> tenants,
                       metrics::Registry& registry = metrics::DefaultRegistry());

  // OK when `demand` fits beside what `tenant` has in flight under `limits`; else
  // RESOURCE_EXHAUSTED naming the limit and the tenant's use (retry once a job ends), or
  // INVALID_ARGUMENT when the demand alone exceeds the limit (no retry can help). Counts each
  // refusal.
  absl::Status Check(const std::string& tenant, const rpc::TenantLimits& limits, TenantUse demand);

  // Check for one job of `rows`, then counts it for `tenant` until Release. ALREADY_EXISTS for a
  // job already counted.
  absl::Status Reserve(const std::string& job_id, const std::string& tenant,
                       const rpc::TenantLimits& limits, int rows);

  // The job ended (finished, failed, cancelled, refused after Reserve): its tenant gets its
  // share back. Unknown ids are ignored, so release is idempotent.
  void Release(const std::string& job_id);

  TenantUse InFlight(const std::string& tenant) const;

 private:
  struct Held {
    std::string tenant;
    int rows = 0;
  };

  absl::Status CheckLocked(const std::string& tenant, const rpc::TenantLimits& limits,
                           TenantUse demand) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  metrics::Family<metrics::Counter>& rejections_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, TenantUse> use_ ABSL_GUARDED_BY(mu_);  // Non-zero only.
  absl::flat_hash_map<std::string, Held> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_CLUSTER_TENANT_QUOTA_H_
