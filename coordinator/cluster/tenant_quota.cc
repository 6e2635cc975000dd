#include "coordinator/cluster/tenant_quota.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace arbor::coordinator {
namespace {

// Tenants with a series of their own; the rest of a very long token file counts as "other", so
// the family stays within what the registry allows one family.
constexpr size_t kMaxTenantSeries = 1000;

metrics::Family<metrics::Counter>& RejectionCounter(std::vector<std::string> tenants,
                                                    metrics::Registry& registry) {
  if (tenants.size() > kMaxTenantSeries) tenants.resize(kMaxTenantSeries);
  if (tenants.empty()) tenants.push_back(metrics::kOtherLabelValue);
  return registry.AddCounter(
      "arbor_coordinator_tenant_rejections_total",
      "Jobs refused because their tenant was at its jobs= or rows= limit of the token file, by "
      "tenant (names a reload added count as other).",
      {{"tenant", std::move(tenants)}});
}

}  // namespace

TenantQuota::TenantQuota(std::vector<std::string> tenants, metrics::Registry& registry)
    : rejections_(RejectionCounter(std::move(tenants), registry)) {}

absl::Status TenantQuota::Check(const std::string& tenant, const rpc::TenantLimits& limits,
                                TenantUse demand) {
  absl::MutexLock lock(&mu_);
  return CheckLocked(tenant, limits, demand);
}

absl::Status TenantQuota::CheckLocked(const std::string& tenant, const rpc::TenantLimits& limits,
                                      TenantUse demand) {
  const auto it = use_.find(tenant);
  const TenantUse use = it == use_.end() ? TenantUse() : it->second;
  struct Bound {
    const char* key;
    int limit, used, asked;
  };
  for (const Bound& bound : {Bound{"jobs", limits.jobs, use.jobs, demand.jobs},
                             Bound{"rows", limits.rows, use.rows, demand.rows}}) {
    if (bound.limit == 0 || bound.used + bound.asked <= bound.limit) continue;
    rejections_.WithLabels({tenant}).Inc();
    if (bound.asked > bound.limit) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the request needs ", bound.asked, " ", bound.key, " at once, more than tenant '", tenant,
          "' may have in flight (", bound.key, "=", bound.limit,
          " in the token file); ask for fewer choices or a narrower policy (a job's rows are "
          "its policy's branch width, beams or traces)"));
    }
    return absl::ResourceExhaustedError(
        absl::StrCat("tenant '", tenant, "' is at its limit of ", bound.key, ": ", bound.used,
                     " in flight of ", bound.key, "=", bound.limit, ", and the request needs ",
                     bound.asked, "; retry when one of its jobs ends"));
  }
  return absl::OkStatus();
}

absl::Status TenantQuota::Reserve(const std::string& job_id, const std::string& tenant,
                                  const rpc::TenantLimits& limits, int rows) {
  absl::MutexLock lock(&mu_);
  if (jobs_.contains(job_id)) {
    return absl::AlreadyExistsError(absl::StrCat("job ", job_id, " is already counted"));
  }
  const TenantUse demand{1, rows};
  if (absl::Status fits = CheckLocked(tenant, limits, demand); !fits.ok()) return fits;
  jobs_[job_id] = Held{tenant, rows};
  TenantUse& use = use_[tenant];
  use.jobs += demand.jobs;
  use.rows += demand.rows;
  return absl::OkStatus();
}

void TenantQuota::Release(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  const auto held = jobs_.find(job_id);
  if (held == jobs_.end()) return;
  const auto it = use_.find(held->second.tenant);
  it->second.jobs -= 1;
  it->second.rows -= held->second.rows;
  if (it->second == TenantUse()) use_.erase(it);
  jobs_.erase(held);
}

TenantUse TenantQuota::InFlight(const std::string& tenant) const {
  absl::MutexLock lock(&mu_);
  const auto it = use_.find(tenant);
  return it == use_.end() ? TenantUse() : it->second;
}

}  // namespace arbor::coordinator
