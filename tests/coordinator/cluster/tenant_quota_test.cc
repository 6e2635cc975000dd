// The per-tenant limits: jobs and rows in flight per tenant, refusals that say which limit and
// how much is in use, the share returned when a job ends, and the refusal counter per tenant.
#include "coordinator/cluster/tenant_quota.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "metrics/registry.h"
#include "tests/support/metric_samples.h"

namespace arbor::coordinator {
namespace {

bool Contains(const absl::Status& status, const std::string& text) {
  return status.message().find(text) != absl::string_view::npos;
}

TEST(TenantQuota, JobsLimitRefusesNamingTheLimitAndTheUse) {
  metrics::Registry registry;
  TenantQuota quota({"alice", "bob"}, registry);
  const rpc::TenantLimits two_jobs{2, 0};
  ASSERT_TRUE(quota.Reserve("a1", "alice", two_jobs, 4).ok());
  ASSERT_TRUE(quota.Reserve("a2", "alice", two_jobs, 4).ok());
  const absl::Status refused = quota.Reserve("a3", "alice", two_jobs, 1);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(refused, "tenant 'alice' is at its limit of jobs: 2 in flight of jobs=2"))
      << refused;
  EXPECT_EQ(quota.InFlight("alice"), (TenantUse{2, 8})) << "a refused job is not counted";
  EXPECT_TRUE(quota.Reserve("b1", "bob", rpc::TenantLimits(), 64).ok()) << "bob is unlimited";
  EXPECT_TRUE(quota.Reserve("b2", "bob", two_jobs, 1).ok()) << "alice's jobs are not bob's";
}

TEST(TenantQuota, RowsLimitCountsEachJobsRows) {
  metrics::Registry registry;
  TenantQuota quota({"alice"}, registry);
  const rpc::TenantLimits rows{0, 10};
  ASSERT_TRUE(quota.Reserve("a1", "alice", rows, 4).ok());
  ASSERT_TRUE(quota.Reserve("a2", "alice", rows, 4).ok());
  const absl::Status refused = quota.Reserve("a3", "alice", rows, 3);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(refused, "limit of rows: 8 in flight of rows=10, and the request needs 3"))
      << refused;
  EXPECT_TRUE(quota.Reserve("a4", "alice", rows, 2).ok()) << "a job that fits still runs";
  EXPECT_EQ(quota.InFlight("alice"), (TenantUse{3, 10}));
}

TEST(TenantQuota, DemandBeyondTheLimitItselfIsInvalid) {
  metrics::Registry registry;
  TenantQuota quota({"alice"}, registry);
  const absl::Status wide = quota.Reserve("a1", "alice", {0, 4}, 8);
  EXPECT_EQ(wide.code(), absl::StatusCode::kInvalidArgument) << "no retry can make it fit";
  EXPECT_TRUE(Contains(wide, "needs 8 rows at once")) << wide;
  EXPECT_TRUE(Contains(wide, "rows=4")) << wide;
  const absl::Status many = quota.Check("alice", {2, 0}, {3, 3});
  EXPECT_EQ(many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(many, "needs 3 jobs at once")) << many;
  EXPECT_EQ(quota.InFlight("alice"), TenantUse());
}

TEST(TenantQuota, CheckCountsNothingAndSeesTheWholeRequest) {
  metrics::Registry registry;
  TenantQuota quota({"alice"}, registry);
  const rpc::TenantLimits limits{3, 0};
  ASSERT_TRUE(quota.Reserve("a1", "alice", limits, 1).ok());
  EXPECT_TRUE(quota.Check("alice", limits, {2, 2}).ok());
  EXPECT_EQ(quota.Check("alice", limits, {3, 3}).code(), absl::StatusCode::kResourceExhausted)
      << "three choices do not fit beside one job";
  EXPECT_EQ(quota.InFlight("alice"), (TenantUse{1, 1}));
}

TEST(TenantQuota, ReleaseReturnsTheShareOnceAndIgnoresUnknownIds) {
  metrics::Registry registry;
  TenantQuota quota({"alice"}, registry);
  const rpc::TenantLimits one{1, 0};
  ASSERT_TRUE(quota.Reserve("a1", "alice", one, 4).ok());
  EXPECT_EQ(quota.Reserve("a1", "alice", {}, 4).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_FALSE(quota.Reserve("a2", "alice", one, 4).ok());
  quota.Release("a1");
  quota.Release("a1");
  quota.Release("never-counted");
  EXPECT_EQ(quota.InFlight("alice"), TenantUse());
  EXPECT_TRUE(quota.Reserve("a2", "alice", one, 4).ok()) << "the slot is free again";
}

TEST(TenantQuota, ConcurrentReservesNeverExceedTheLimit) {
  metrics::Registry registry;
  TenantQuota quota({"alice"}, registry);
  std::atomic<int> counted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        counted += quota.Reserve(std::to_string(t * 100 + i), "alice", {5, 0}, 1).ok();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counted.load(), 5);
  EXPECT_EQ(quota.InFlight("alice").jobs, 5);
}

TEST(TenantQuota, CountsRefusalsPerTenant) {
  using metrics::testing::SampleValue;
  metrics::Registry registry;
  TenantQuota quota({"alice", "bob"}, registry);
  ASSERT_TRUE(quota.Reserve("a1", "alice", {1, 0}, 1).ok());
  ASSERT_FALSE(quota.Reserve("a2", "alice", {1, 0}, 1).ok());
  ASSERT_FALSE(quota.Check("alice", {1, 0}, {1, 1}).ok());
  ASSERT_FALSE(quota.Reserve("c1", "carol", {0, 2}, 3).ok());  // Added by a reload.
  ASSERT_EQ(quota.Reserve("a1", "alice", {}, 1).code(), absl::StatusCode::kAlreadyExists);
  const std::string text = registry.RenderText();
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_tenant_rejections_total{tenant=\"alice\"}"), 2);
  EXPECT_EQ(SampleValue(text, "arbor_coordinator_tenant_rejections_total{tenant=\"other\"}"), 1);
}

}  // namespace
}  // namespace arbor::coordinator
