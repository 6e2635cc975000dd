// KvBlockManager::CheckInvariants, which the KV tests assert after every operation, rejects
// broken bookkeeping: a pool built through the public operations (shared prefixes, a fork, a
// released sequence whose blocks stay cached) passes, and each fault planted in it afterwards —
// a refcount off by one, a block twice in the free list, a wrong tree parent, a stale eviction
// flag, a block table too short for its tokens, a shared partial tail — fails naming it.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "worker/kv/kv_block_manager.h"

namespace arbor::worker {

// The manager's private state, for planting faults (a friend of KvBlockManager).
class KvBlockManagerTestPeer {
 public:
  static int32_t& refcount(KvBlockManager& kv, int32_t block) { return kv.blocks_[block].refcount; }
  static int32_t& parent(KvBlockManager& kv, int32_t block) { return kv.blocks_[block].parent; }
  static bool& evictable(KvBlockManager& kv, int32_t block) { return kv.blocks_[block].evictable; }
  static std::vector<int32_t>& free_list(KvBlockManager& kv) { return kv.free_; }
  static KvSequence& sequence(KvBlockManager& kv, SeqId id) { return kv.sequences_.at(id); }
};

namespace {

using Peer = KvBlockManagerTestPeer;

std::vector<int32_t> Range(int32_t n, int32_t start = 0) {
  std::vector<int32_t> v(n);
  for (int32_t i = 0; i < n; ++i) v[i] = start + i;
  return v;
}

// Blocks of 4 tokens. Sequence 1 holds 10 tokens (two full blocks in the tree, a private tail);
// 2 shares its first 8 and has a tail of its own; 3 forks 1 at 9 tokens; 4 held 12 tokens of
// another prompt and was released, so its three full blocks stay cached and evictable.
KvBlockManager Build() {
  KvBlockManager kv(/*num_blocks=*/32, /*block_size=*/4);
  EXPECT_TRUE(kv.Create(1).ok());
  EXPECT_TRUE(kv.Append(1, Range(10)).ok());
  EXPECT_TRUE(kv.Create(2).ok());
  EXPECT_TRUE(kv.Append(2, Range(10)).ok());
  EXPECT_TRUE(kv.Fork(1, 3, 9).ok());
  EXPECT_TRUE(kv.Create(4).ok());
  EXPECT_TRUE(kv.Append(4, Range(12, 100)).ok());
  EXPECT_TRUE(kv.Append(4, Range(1, 7)).ok());
  EXPECT_TRUE(kv.Release(4).ok());
  return kv;
}

void ExpectRejected(const std::function<void(KvBlockManager&)>& plant, const std::string& words) {
  KvBlockManager kv = Build();
  ASSERT_TRUE(kv.CheckInvariants().ok()) << kv.CheckInvariants();
  plant(kv);
  const absl::Status status = kv.CheckInvariants();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  EXPECT_NE(status.message().find(words), std::string::npos) << status;
}

int32_t BlockOf(KvBlockManager& kv, SeqId id, int index) {
  return Peer::sequence(kv, id).blocks[index];
}

TEST(KvBlockManagerInvariants, TheBuiltPoolPasses) {
  KvBlockManager kv = Build();
  EXPECT_TRUE(kv.CheckInvariants().ok()) << kv.CheckInvariants();
  EXPECT_GT(kv.stats().cached_blocks, 0);  // The released prompt's blocks are cached.
}

TEST(KvBlockManagerInvariants, RejectsARefcountOffByOne) {
  ExpectRejected([](KvBlockManager& kv) { ++Peer::refcount(kv, BlockOf(kv, 1, 0)); }, "refcount");
}

TEST(KvBlockManagerInvariants, RejectsABlockTwiceInTheFreeList) {
  ExpectRejected(
      [](KvBlockManager& kv) {
        std::vector<int32_t>& free_list = Peer::free_list(kv);
        free_list.push_back(free_list.front());
      },
      "twice in the free list");
}

TEST(KvBlockManagerInvariants, RejectsAWrongTreeParent) {
  ExpectRejected(
      [](KvBlockManager& kv) { Peer::parent(kv, BlockOf(kv, 1, 1)) = BlockOf(kv, 1, 1); },
      "wrong parent");
}

TEST(KvBlockManagerInvariants, RejectsAStaleEvictionFlag) {
  ExpectRejected([](KvBlockManager& kv) { Peer::evictable(kv, BlockOf(kv, 1, 0)) = true; },
                 "eviction list");
}

TEST(KvBlockManagerInvariants, RejectsABlockTableTooShortForItsTokens) {
  ExpectRejected([](KvBlockManager& kv) { Peer::sequence(kv, 2).blocks.pop_back(); },
                 "has 2 blocks for 10 tokens");
}

TEST(KvBlockManagerInvariants, RejectsASharedPartialTail) {
  ExpectRejected(
      [](KvBlockManager& kv) {
        KvSequence& shared = Peer::sequence(kv, 2);
        const int32_t own_tail = shared.blocks.back();
        shared.blocks.back() = BlockOf(kv, 1, 2);  // Sequence 1's private tail.
        --Peer::refcount(kv, own_tail);
        ++Peer::refcount(kv, shared.blocks.back());
      },
      "shared tail");
}

}  // namespace
}  // namespace arbor::worker
