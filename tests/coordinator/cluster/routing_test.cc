#include "coordinator/cluster/routing.h"

#include <gtest/gtest.h>

#include <vector>

namespace arbor::coordinator {
namespace {

RoutingCandidate Ready(const std::string& id, int64_t live) {
  RoutingCandidate c;
  c.worker_id = id;
  c.ready = true;
  c.live_sequences = live;
  return c;
}

std::vector<int32_t> Prompt(int length, int32_t first = 7) {
  std::vector<int32_t> tokens(length);
  for (int i = 0; i < length; ++i) tokens[i] = first + i;
  return tokens;
}

TEST(PrefixBlockHashes, ChainedOverFullBlocksOnly) {
  EXPECT_TRUE(PrefixBlockHashes(Prompt(15), 16, 64).empty());
  EXPECT_EQ(PrefixBlockHashes(Prompt(33), 16, 64).size(), 2u);
  EXPECT_EQ(PrefixBlockHashes(Prompt(100), 16, 3).size(), 3u);
  // Same second block after a different first block: different hash (the chain).
  std::vector<int32_t> a = Prompt(32), b = Prompt(32);
  b[0] = 999;
  EXPECT_NE(PrefixBlockHashes(a, 16, 64)[1], PrefixBlockHashes(b, 16, 64)[1]);
  // A prompt extending another shares its leading hashes.
  EXPECT_EQ(PrefixBlockHashes(Prompt(32), 16, 64)[0], PrefixBlockHashes(Prompt(48), 16, 64)[0]);
}

TEST(ChooseWorker, LeastLoadWithoutAffinity) {
  const std::vector<RoutingCandidate> c = {Ready("a", 5), Ready("b", 2), Ready("c", 9)};
  PrefixAffinity affinity(100);
  auto decision = ChooseWorker(c, {}, {}, affinity, {});
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->worker_id, "b");
  EXPECT_EQ(decision->affinity_blocks, 0);
}

TEST(ChooseWorker, LoadCountsQueuedTokensAndJobsSinceTheReport) {
  std::vector<RoutingCandidate> c = {Ready("a", 1), Ready("b", 1)};
  c[0].queued_tokens = 4096;  // 8 load units at 512 tokens each.
  PrefixAffinity affinity(100);
  EXPECT_EQ(ChooseWorker(c, {}, {}, affinity, {})->worker_id, "b");
  c[0].queued_tokens = 0;
  c[1].jobs_since_report = 3;
  EXPECT_EQ(ChooseWorker(c, {}, {}, affinity, {})->worker_id, "a");
}

TEST(ChooseWorker, PrefersTheAffineWorkerUnlessOverloaded) {
  std::vector<RoutingCandidate> c = {Ready("a", 0), Ready("b", 3)};
  PrefixAffinity affinity(100);
  const auto prefix = PrefixBlockHashes(Prompt(64), 16, 64);
  affinity.Record(prefix, "b", absl::UnixEpoch());
  auto decision = ChooseWorker(c, prefix, {}, affinity, {});
  EXPECT_EQ(decision->worker_id, "b");
  EXPECT_EQ(decision->affinity_blocks, 4);
  c[1].live_sequences = 5;  // Beyond the slack of 4 over the least loaded.
  EXPECT_EQ(ChooseWorker(c, prefix, {}, affinity, {})->worker_id, "a");
}

TEST(ChooseWorker, LongestPrefixWins) {
  std::vector<RoutingCandidate> c = {Ready("a", 0), Ready("b", 0), Ready("c", 0)};
  PrefixAffinity affinity(100);
  affinity.Record(PrefixBlockHashes(Prompt(16), 16, 64), "a", absl::UnixEpoch());
  affinity.Record(PrefixBlockHashes(Prompt(48), 16, 64), "b", absl::UnixEpoch());
  const auto decision = ChooseWorker(c, PrefixBlockHashes(Prompt(64), 16, 64), {}, affinity, {});
  EXPECT_EQ(decision->worker_id, "b");
  EXPECT_EQ(decision->affinity_blocks, 3);
}

TEST(ChooseWorker, CacheStatsOverruleStaleAffinity) {
  std::vector<RoutingCandidate> c = {Ready("a", 0), Ready("b", 1)};
  PrefixAffinity affinity(100);
  const auto prefix = PrefixBlockHashes(Prompt(64), 16, 64);
  affinity.Record(prefix, "b", absl::FromUnixSeconds(10));
  // b reported after receiving the prefix and holds no blocks: it lost them.
  c[1].report_time = absl::FromUnixSeconds(20);
  c[1].resident_blocks = 0;
  EXPECT_EQ(ChooseWorker(c, prefix, {}, affinity, {})->worker_id, "a");
  c[1].resident_blocks = 10;
  EXPECT_EQ(ChooseWorker(c, prefix, {}, affinity, {})->worker_id, "b");
  // A cache pinned by live sequences would evict the prefix: go elsewhere.
  c[1].total_blocks = 100;
  c[1].used_blocks = 99;
  EXPECT_EQ(ChooseWorker(c, prefix, {}, affinity, {})->worker_id, "a");
}

TEST(ChooseWorker, ExcludedAndNotReadyWorkersAreSkipped) {
  std::vector<RoutingCandidate> c = {Ready("a", 0), Ready("b", 5), Ready("c", 0)};
  c[2].ready = false;
  PrefixAffinity affinity(100);
  const auto prefix = PrefixBlockHashes(Prompt(32), 16, 64);
  affinity.Record(prefix, "a", absl::UnixEpoch());
  EXPECT_EQ(ChooseWorker(c, prefix, {"a"}, affinity, {})->worker_id, "b");
  absl::Status none = ChooseWorker(c, prefix, {"a", "b"}, affinity, {}).status();
  EXPECT_EQ(none.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(none.message().find("1 not ready, 2 excluded"), std::string::npos) << none;
}

TEST(PrefixAffinity, BoundedLruAndForgetWorker) {
  PrefixAffinity affinity(3);
  const auto p1 = PrefixBlockHashes(Prompt(48, 1), 16, 64);
  const auto p2 = PrefixBlockHashes(Prompt(16, 500), 16, 64);
  affinity.Record(p1, "a", absl::UnixEpoch());
  affinity.Record(p2, "b", absl::UnixEpoch());  // Evicts p1's oldest block hash.
  EXPECT_EQ(affinity.size(), 3u);
  EXPECT_EQ(affinity.Longest(p2, {"a", "b"}).worker_id, "b");
  EXPECT_EQ(affinity.Longest(p1, {"a", "b"}).blocks, 3);
  affinity.ForgetWorker("a");
  EXPECT_EQ(affinity.Longest(p1, {"a", "b"}).blocks, 0);
  EXPECT_EQ(affinity.size(), 1u);
}

}  // namespace
}  // namespace arbor::coordinator
