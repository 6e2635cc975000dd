// The bookkeeping half of the paged, prefix-sharing KV cache (docs/ARCHITECTURE.md §5): which
// physical blocks each sequence's tokens live in, who references each block, and a radix tree over
// token ids through which full blocks are shared across sequences and jobs. It owns no tensors:
// every operation that must move KV data returns the block copies to perform, so the storage (a
// backend's per-layer K/V pools, see kv_cache.h) stays separate and this class can be
// property-tested exhaustively on its own.
//
// Block states: FREE (no reference, not in the tree), USED (referenced by ≥ 1 sequence) and
// CACHED (unreferenced but in the tree, kept for future prefix hits, evicted least recently
// used when space is needed). Full blocks are immutable once written; a partial last block is
// always private to its sequence (Fork and Truncate copy it when it would be shared), so
// appending never writes into a block another sequence can see.
//
// Not thread-safe: the engine drives it from its scheduling thread.
#ifndef ARBOR_WORKER_KV_KV_BLOCK_MANAGER_H_
#define ARBOR_WORKER_KV_KV_BLOCK_MANAGER_H_

#include <cstdint>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace arbor::worker {

using SeqId = int64_t;

// Copy the first `num_tokens` slots of block `src` into block `dst`, in every layer, K and V.
struct BlockCopy {
  int32_t src = 0;
  int32_t dst = 0;
  int32_t num_tokens = 0;
};

struct KvStats {
  int64_t total_blocks = 0;
  int64_t used_blocks = 0;    // Referenced by at least one sequence.
  int64_t cached_blocks = 0;  // Unreferenced, kept for prefix hits, evictable.
  int64_t free_blocks = 0;
  int64_t hit_tokens = 0;      // Tokens whose KV came from the prefix tree, since construction.
  int64_t evicted_blocks = 0;  // Cached blocks reclaimed for new data, since construction.
};

struct KvSequence {
  std::vector<int32_t> tokens;  // Every token with KV (or about to get it this step).
  std::vector<int32_t> blocks;  // Block table: position p lives in blocks[p / block_size].
};

class KvBlockManager {
 public:
  // `num_blocks` ≥ 1 and `block_size` ≥ 1 (checked by the caller that reads the flags).
  KvBlockManager(int32_t num_blocks, int32_t block_size);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }

  // A new empty sequence. ALREADY_EXISTS if `id` is taken.
  absl::Status Create(SeqId id);

  // Appends `tokens` (non-empty) to `id`. While the sequence ends on a block boundary inside the
  // tree, whole blocks of `tokens` already in the tree are shared instead of allocated; the
  // result is how many leading tokens thus already have KV. The last token is never taken from
  // the tree (the caller needs its logits, so it must be computed): 0 ≤ result < tokens.size().
  // The remaining tokens get slots the caller must fill with their K/V in this step, before any
  // other sequence's attention reads them (blocks they fill are published to the tree at once).
  // RESOURCE_EXHAUSTED, with nothing changed, when the blocks cannot be found even by eviction.
  absl::StatusOr<int32_t> Append(SeqId id, std::span<const int32_t> tokens);

  // A new sequence `child` holding the first `len` tokens of `parent` (0 ≤ len ≤ its length):
  // full blocks are shared, the partial last block is copied (the returned copy).
  absl::StatusOr<std::vector<BlockCopy>> Fork(SeqId parent, SeqId child, int32_t len);

  // Keeps the first `len` tokens of `id` (0 ≤ len ≤ its length), dropping references to the
  // blocks beyond. If the new partial last block is shared or in the tree it is copied first.
  absl::StatusOr<std::vector<BlockCopy>> Truncate(SeqId id, int32_t len);

  // Drops `id` and its references; its blocks in the tree stay cached.
  absl::Status Release(SeqId id);

  // The sequence, valid until the next mutating call; NOT_FOUND for unknown ids.
  absl::StatusOr<const KvSequence*> Find(SeqId id) const;
  int64_t num_sequences() const { return static_cast<int64_t>(sequences_.size()); }

  KvStats stats() const;

  // Recomputes every derived quantity from scratch (refcounts from the block tables, block
  // states, the tree's shape and keys, the eviction order) and reports the first mismatch as
  // INTERNAL. For tests and debug checks; O(blocks + tokens).
  absl::Status CheckInvariants() const;

 private:
  // Plants faults in the bookkeeping for the tests that show CheckInvariants rejecting each.
  friend class KvBlockManagerTestPeer;

  static constexpr int32_t kRoot = -1;
  using Children = absl::flat_hash_map<std::vector<int32_t>, int32_t>;

  struct Block {
    int32_t refcount = 0;
    bool in_tree = false;
    int32_t parent = kRoot;    // Tree parent block (kRoot for a sequence's first block).
    std::vector<int32_t> key;  // The block's block_size tokens, when in the tree.
    Children children;
    uint64_t last_use = 0;   // Tick at which it last became unreferenced.
    bool evictable = false;  // Listed in evictable_ (in tree, unreferenced, childless).
  };

  absl::StatusOr<KvSequence*> Get(SeqId id);
  Children& ChildrenOf(int32_t block) {
    return block == kRoot ? root_children_ : blocks_[block].children;
  }
  void UpdateEvictable(int32_t block);
  void Ref(int32_t block);
  void Unref(int32_t block);
  // A block for new data: a free one, else the least recently used evictable one. The caller
  // has checked that one exists (free_.size() + cached_ > 0).
  int32_t Allocate();
  void Publish(KvSequence& seq, int32_t first_block);

  int32_t num_blocks_;
  int32_t block_size_;
  std::vector<Block> blocks_;
  std::vector<int32_t> free_;
  int64_t cached_ = 0;
  Children root_children_;
  std::set<std::pair<uint64_t, int32_t>> evictable_;  // (last_use, block), oldest first.
  uint64_t clock_ = 0;
  int64_t hit_tokens_ = 0;
  int64_t evicted_ = 0;
  absl::flat_hash_map<SeqId, KvSequence> sequences_;
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_KV_KV_BLOCK_MANAGER_H_
