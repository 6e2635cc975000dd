// The KV cache bookkeeping: directed cases (prefix hits, copy-on-write, eviction order,
// exhaustion, bad ids) and a randomized property test that drives create/append/fork/truncate/
// release against a shadow model, checking after every operation that the invariants hold and
// that every live position's slot holds the KV of exactly its prefix (simulated storage).
#include "worker/kv/kv_block_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <random>
#include <vector>

#include "tests/support/test_seed.h"

namespace arbor::worker {
namespace {

std::vector<int32_t> Range(int32_t n, int32_t start = 0) {
  std::vector<int32_t> v(n);
  for (int32_t i = 0; i < n; ++i) v[i] = start + i;
  return v;
}

TEST(KvBlockManager, PrefixHitSharesFullBlocksButComputesTheLastToken) {
  KvBlockManager kv(/*num_blocks=*/16, /*block_size=*/4);
  ASSERT_TRUE(kv.Create(1).ok());
  ASSERT_EQ(*kv.Append(1, Range(10)), 0);
  ASSERT_TRUE(kv.Create(2).ok());
  // Same 10 tokens: blocks [0,4) and [4,8) are shared; 8, 9 are computed.
  ASSERT_EQ(*kv.Append(2, Range(10)), 8);
  const KvSequence* a = *kv.Find(1);
  const KvSequence* b = *kv.Find(2);
  EXPECT_EQ(a->blocks[0], b->blocks[0]);
  EXPECT_EQ(a->blocks[1], b->blocks[1]);
  EXPECT_NE(a->blocks[2], b->blocks[2]);
  // Exactly one block-aligned prompt: the last block holds the last token, so it is computed.
  ASSERT_TRUE(kv.Create(3).ok());
  EXPECT_EQ(*kv.Append(3, Range(8)), 4);
  // A different token inside the second block stops the match there.
  ASSERT_TRUE(kv.Create(4).ok());
  std::vector<int32_t> other = Range(10);
  other[5] = 99;
  EXPECT_EQ(*kv.Append(4, other), 4);
  EXPECT_EQ(kv.stats().hit_tokens, 16);
  EXPECT_TRUE(kv.CheckInvariants().ok()) << kv.CheckInvariants();
  // Released blocks stay cached and are hit again by a later sequence.
  for (SeqId id : {1, 2, 3, 4}) ASSERT_TRUE(kv.Release(id).ok());
  EXPECT_EQ(kv.stats().used_blocks, 0);
  EXPECT_GT(kv.stats().cached_blocks, 0);
  ASSERT_TRUE(kv.Create(5).ok());
  EXPECT_EQ(*kv.Append(5, Range(9)), 8);
  EXPECT_TRUE(kv.CheckInvariants().ok()) << kv.CheckInvariants();
}

TEST(KvBlockManager, ForkCopiesOnlyThePartialBlock) {
  KvBlockManager kv(16, 4);
  ASSERT_TRUE(kv.Create(1).ok());
  ASSERT_TRUE(kv.Append(1, Range(10)).ok());
  const int64_t used = kv.stats().used_blocks;
  auto copies = kv.Fork(1, 2, 10);
  ASSERT_TRUE(copies.ok()) << copies.status();
  ASSERT_EQ(copies->size(), 1u);
  const KvSequence* parent = *kv.Find(1);
  const KvSequence* child = *kv.Find(2);
  EXPECT_EQ((*copies)[0].src, parent->blocks[2]);
  EXPECT_EQ((*copies)[0].dst, child->blocks[2]);
  EXPECT_EQ((*copies)[0].num_tokens, 2);
  EXPECT_EQ(kv.stats().used_blocks, used + 1);
  // At a block boundary nothing is copied.
  copies = kv.Fork(1, 3, 8);
  ASSERT_TRUE(copies.ok());
  EXPECT_TRUE(copies->empty());
  EXPECT_EQ(kv.stats().used_blocks, used + 1);
  // Truncating into a shared full block copies it before the sequence may write there.
  copies = kv.Truncate(3, 6);
  ASSERT_TRUE(copies.ok());
  ASSERT_EQ(copies->size(), 1u);
  EXPECT_EQ((*copies)[0].src, parent->blocks[1]);
  EXPECT_EQ((*copies)[0].num_tokens, 2);
  EXPECT_TRUE(kv.CheckInvariants().ok()) << kv.CheckInvariants();
}

TEST(KvBlockManager, BadIdsAndLengths) {
  KvBlockManager kv(4, 2);
  ASSERT_TRUE(kv.Create(1).ok());
  EXPECT_EQ(kv.Create(1).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(kv.Append(7, Range(2)).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(kv.Append(1, {}).status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(kv.Append(1, Range(3)).ok());
  EXPECT_EQ(kv.Fork(1, 2, 4).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(kv.Fork(1, 2, -1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(kv.Fork(1, 1, 1).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(kv.Fork(9, 2, 1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(kv.Truncate(1, 4).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(kv.Release(9).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(kv.CheckInvariants().ok());
}

TEST(KvBlockManager, ExhaustionChangesNothing) {
  KvBlockManager kv(3, 4);
  ASSERT_TRUE(kv.Create(1).ok());
  ASSERT_TRUE(kv.Append(1, Range(10)).ok());  // 3 blocks, all used.
  const KvStats before = kv.stats();
  const std::vector<int32_t> tokens_before = (*kv.Find(1))->tokens;
  EXPECT_EQ(kv.Append(1, Range(3)).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(kv.Fork(1, 2, 5).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(kv.Find(2).ok());
  ASSERT_TRUE(kv.Create(3).ok());
  EXPECT_EQ(kv.Append(3, Range(1, 50)).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE((*kv.Find(3))->tokens.empty());
  EXPECT_EQ((*kv.Find(1))->tokens, tokens_before);
  EXPECT_EQ(kv.stats().used_blocks, before.used_blocks);
  EXPECT_EQ(kv.stats().free_blocks, before.free_blocks);
  EXPECT_TRUE(kv.CheckInvariants().ok()) << kv.CheckInvariants();
  // Filling the 2 free tokens of the last block still works.
  EXPECT_TRUE(kv.Append(1, Range(2)).ok());
}

TEST(KvBlockManager, EvictsLeastRecentlyUsedLeavesFirst) {
  KvBlockManager kv(6, 2);
  // Two cached prompts of 2 full blocks each (+1 computed token in a third block).
  for (SeqId id : {1, 2}) {
    ASSERT_TRUE(kv.Create(id).ok());
    ASSERT_TRUE(kv.Append(id, Range(5, id * 100)).ok());
  }
  ASSERT_TRUE(kv.Release(1).ok());  // Older.
  ASSERT_TRUE(kv.Release(2).ok());
  EXPECT_EQ(kv.stats().cached_blocks, 4);
  EXPECT_EQ(kv.stats().free_blocks, 2);
  // 6 new blocks' worth: 2 free, then the 2 blocks of prompt 1 (leaf first), then of prompt 2.
  ASSERT_TRUE(kv.Create(3).ok());
  ASSERT_TRUE(kv.Append(3, Range(8, 1000)).ok());  // 4 blocks: 2 free + prompt 1's two.
  EXPECT_EQ(kv.stats().evicted_blocks, 2);
  EXPECT_TRUE(kv.CheckInvariants().ok()) << kv.CheckInvariants();
  ASSERT_TRUE(kv.Create(4).ok());
  EXPECT_EQ(*kv.Append(4, Range(3, 200)), 2);  // Prompt 2 survived (its first block hits).
  ASSERT_TRUE(kv.Release(3).ok());
  ASSERT_TRUE(kv.Create(5).ok());
  EXPECT_EQ(*kv.Append(5, Range(3, 100)), 0);  // Prompt 1 was evicted.
  EXPECT_TRUE(kv.CheckInvariants().ok()) << kv.CheckInvariants();
}

// Simulated storage: each slot holds a hash of the prefix whose KV it stores. A position's KV
// depends on every token up to it, so a correct cache must show, for every live sequence and
// position p, the hash of tokens[0..p].
uint64_t Extend(uint64_t h, int32_t token) {
  return (h ^ (token + 0x9e3779b97f4a7c15ull)) * 0x100000001b3ull;
}

class Storage {
 public:
  Storage(int32_t blocks, int32_t block_size)
      : block_size_(block_size), slots_(blocks * block_size, 0) {}
  void Apply(const std::vector<BlockCopy>& copies) {
    for (const BlockCopy& c : copies) {
      for (int32_t i = 0; i < c.num_tokens; ++i) {
        slots_[c.dst * block_size_ + i] = slots_[c.src * block_size_ + i];
      }
    }
  }
  void Write(const KvSequence& seq, int64_t from) {
    uint64_t h = 0;
    for (int64_t p = 0; p < static_cast<int64_t>(seq.tokens.size()); ++p) {
      h = Extend(h, seq.tokens[p]);
      if (p >= from) slots_[seq.blocks[p / block_size_] * block_size_ + p % block_size_] = h;
    }
  }
  ::testing::AssertionResult Check(SeqId id, const KvSequence& seq) const {
    uint64_t h = 0;
    for (int64_t p = 0; p < static_cast<int64_t>(seq.tokens.size()); ++p) {
      h = Extend(h, seq.tokens[p]);
      if (slots_[seq.blocks[p / block_size_] * block_size_ + p % block_size_] != h) {
        return ::testing::AssertionFailure() << "sequence " << id << " position " << p;
      }
    }
    return ::testing::AssertionSuccess();
  }

 private:
  int32_t block_size_;
  std::vector<uint64_t> slots_;
};

// One randomized run over a manager: the manager, its slots' contents, and the tokens each live
// sequence should hold (the shadow). The operations draw from `rng` in a fixed order, so a seed
// replays the run.
class RandomKvRun {
 public:
  RandomKvRun(std::mt19937& rng, int32_t num_blocks, int32_t block_size)
      : rng_(rng),
        num_blocks_(num_blocks),
        block_size_(block_size),
        kv_(num_blocks, block_size),
        storage_(num_blocks, block_size),
        stems_(3) {
    for (auto& stem : stems_) {
      stem.resize(2 * block_size + 1);
      for (int32_t& t : stem) t = std::uniform_int_distribution<int32_t>(0, 9)(rng_);
    }
  }

  // One random operation, then the manager's invariants and every sequence's tokens and slots.
  void Step(int step) {
    const int op = std::uniform_int_distribution<int>(0, 10)(rng_);
    if (shadow_.empty() || op <= 1) {
      ASSERT_NO_FATAL_FAILURE(Create());
    } else if (op <= 4) {
      ASSERT_NO_FATAL_FAILURE(Append());
    } else if (op <= 6) {
      ASSERT_NO_FATAL_FAILURE(Fork());
    } else if (op == 7) {
      ASSERT_NO_FATAL_FAILURE(Truncate());
    } else {  // Release.
      const SeqId id = Pick();
      ASSERT_TRUE(kv_.Release(id).ok());
      shadow_.erase(id);
    }
    const absl::Status invariants = kv_.CheckInvariants();
    ASSERT_TRUE(invariants.ok()) << "step " << step << ": " << invariants;
    ASSERT_EQ(kv_.num_sequences(), static_cast<int64_t>(shadow_.size()));
    for (const auto& [id, tokens] : shadow_) {
      const KvSequence* seq = *kv_.Find(id);
      ASSERT_EQ(seq->tokens, tokens) << "step " << step << " sequence " << id;
      ASSERT_TRUE(storage_.Check(id, *seq)) << "step " << step;
    }
  }

  // Reports the run, checks the prefix cache was used, releases every sequence and checks that
  // the pool is whole again.
  void Finish() {
    std::cout << "block_size " << block_size_ << " blocks " << num_blocks_ << ": " << exhausted_
              << " refused, " << hits_ << " prompt hits, " << kv_.stats().evicted_blocks
              << " evictions\n";
    // The prefix cache must have been exercised; asserted where the pool has room, since with
    // 8 blocks it is mostly full and some seeds see no hit at all (e.g. 1975501124 at 16).
    if (num_blocks_ >= 64) {
      EXPECT_GT(hits_, 0);
    }
    while (!shadow_.empty()) {
      ASSERT_TRUE(kv_.Release(shadow_.begin()->first).ok());
      shadow_.erase(shadow_.begin());
    }
    const KvStats end = kv_.stats();
    EXPECT_EQ(end.used_blocks, 0);
    EXPECT_EQ(end.free_blocks + end.cached_blocks, num_blocks_);
    EXPECT_TRUE(kv_.CheckInvariants().ok());
  }

 private:
  SeqId Pick() {
    auto it = shadow_.begin();
    std::advance(it, std::uniform_int_distribution<size_t>(0, shadow_.size() - 1)(rng_));
    return it->first;
  }

  // New sequence with a prompt from a tiny alphabet.
  void Create() {
    const SeqId id = next_id_++;
    ASSERT_TRUE(kv_.Create(id).ok());
    shadow_[id];
    // A prefix of one of a few shared stems, then a random tail: prompts share prefixes
    // as chat prompts with one system prompt do.
    const std::vector<int32_t>& stem = stems_[std::uniform_int_distribution<int>(0, 2)(rng_)];
    std::vector<int32_t> prompt(
        stem.begin(), stem.begin() + std::uniform_int_distribution<size_t>(0, stem.size())(rng_));
    const int tail = std::uniform_int_distribution<int>(1, block_size_ + 1)(rng_);
    for (int i = 0; i < tail; ++i)
      prompt.push_back(std::uniform_int_distribution<int32_t>(0, 9)(rng_));
    auto hit = kv_.Append(id, prompt);
    if (hit.ok()) {
      shadow_[id] = prompt;
      hits_ += *hit > 0;
      storage_.Write(**kv_.Find(id), *hit);
    } else {
      ASSERT_EQ(hit.status().code(), absl::StatusCode::kResourceExhausted);
      ++exhausted_;
    }
  }

  // Append (decode or a chunk).
  void Append() {
    const SeqId id = Pick();
    std::vector<int32_t> more(std::uniform_int_distribution<int>(1, block_size_ + 1)(rng_));
    for (int32_t& t : more) t = std::uniform_int_distribution<int32_t>(0, 2)(rng_);
    const int64_t old_len = shadow_[id].size();
    auto hit = kv_.Append(id, more);
    if (hit.ok()) {
      shadow_[id].insert(shadow_[id].end(), more.begin(), more.end());
      storage_.Write(**kv_.Find(id), old_len + *hit);
    } else {
      ASSERT_EQ(hit.status().code(), absl::StatusCode::kResourceExhausted);
      ++exhausted_;
    }
  }

  void Fork() {
    const SeqId parent = Pick();
    const int32_t len = std::uniform_int_distribution<int32_t>(0, shadow_[parent].size())(rng_);
    const SeqId child = next_id_++;
    auto copies = kv_.Fork(parent, child, len);
    if (copies.ok()) {
      storage_.Apply(*copies);
      shadow_[child].assign(shadow_[parent].begin(), shadow_[parent].begin() + len);
    } else {
      ASSERT_EQ(copies.status().code(), absl::StatusCode::kResourceExhausted);
      ++exhausted_;
    }
  }

  // Truncate (backspace).
  void Truncate() {
    const SeqId id = Pick();
    const int32_t len = std::uniform_int_distribution<int32_t>(0, shadow_[id].size())(rng_);
    auto copies = kv_.Truncate(id, len);
    if (copies.ok()) {
      storage_.Apply(*copies);
      shadow_[id].resize(len);
    } else {
      ASSERT_EQ(copies.status().code(), absl::StatusCode::kResourceExhausted);
      ++exhausted_;
    }
  }

  std::mt19937& rng_;
  const int32_t num_blocks_, block_size_;
  KvBlockManager kv_;
  Storage storage_;
  std::map<SeqId, std::vector<int32_t>> shadow_;
  SeqId next_id_ = 0;
  std::vector<std::vector<int32_t>> stems_;
  int exhausted_ = 0, hits_ = 0;
};

TEST(KvBlockManager, RandomizedOperationsKeepInvariantsAndContents) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (int32_t block_size : {1, 3, 16}) {
    for (int32_t num_blocks : {8, 64}) {
      SCOPED_TRACE(testing::Message() << "block_size " << block_size << " blocks " << num_blocks);
      RandomKvRun run(rng, num_blocks, block_size);
      for (int step = 0; step < 1500; ++step) ASSERT_NO_FATAL_FAILURE(run.Step(step));
      ASSERT_NO_FATAL_FAILURE(run.Finish());
    }
  }
}

}  // namespace
}  // namespace arbor::worker
