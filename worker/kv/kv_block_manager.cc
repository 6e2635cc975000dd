#include "worker/kv/kv_block_manager.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace arbor::worker {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

KvBlockManager::KvBlockManager(int32_t num_blocks, int32_t block_size)
    : num_blocks_(num_blocks), block_size_(block_size), blocks_(num_blocks) {
  free_.reserve(num_blocks);
  // Reverse order so that blocks are handed out 0, 1, 2, ... (easier to read in dumps).
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

absl::StatusOr<KvSequence*> KvBlockManager::Get(SeqId id) {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) return absl::NotFoundError(absl::StrCat("unknown sequence id ", id));
  return &it->second;
}

absl::StatusOr<const KvSequence*> KvBlockManager::Find(SeqId id) const {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) return absl::NotFoundError(absl::StrCat("unknown sequence id ", id));
  return &it->second;
}

absl::Status KvBlockManager::Create(SeqId id) {
  if (!sequences_.try_emplace(id).second) {
    return absl::AlreadyExistsError(absl::StrCat("sequence id ", id, " already exists"));
  }
  return absl::OkStatus();
}

// Every unreferenced tree block is evictable eventually (its descendants are unreferenced too,
// since a sequence holding a block holds its whole path), but only childless ones can go
// first, so only those are listed.
void KvBlockManager::UpdateEvictable(int32_t block) {
  if (block == kRoot) return;
  Block& b = blocks_[block];
  const bool evictable = b.in_tree && b.refcount == 0 && b.children.empty();
  if (evictable == b.evictable) return;
  if (evictable) {
    evictable_.emplace(b.last_use, block);
  } else {
    evictable_.erase({b.last_use, block});
  }
  b.evictable = evictable;
}

void KvBlockManager::Ref(int32_t block) {
  Block& b = blocks_[block];
  if (b.refcount++ == 0 && b.in_tree) {
    --cached_;
    UpdateEvictable(block);
  }
}

void KvBlockManager::Unref(int32_t block) {
  Block& b = blocks_[block];
  if (--b.refcount > 0) return;
  if (b.in_tree) {
    ++cached_;
    b.last_use = ++clock_;
    UpdateEvictable(block);
  } else {
    free_.push_back(block);
  }
}

int32_t KvBlockManager::Allocate() {
  if (free_.empty()) {
    const int32_t victim = evictable_.begin()->second;
    Block& b = blocks_[victim];
    b.in_tree = false;
    UpdateEvictable(victim);
    ChildrenOf(b.parent).erase(b.key);
    const int32_t parent = b.parent;
    b.key.clear();
    b.parent = kRoot;
    --cached_;
    ++evicted_;
    UpdateEvictable(parent);
    free_.push_back(victim);
  }
  const int32_t block = free_.back();
  free_.pop_back();
  blocks_[block].refcount = 1;
  return block;
}

// Inserts the sequence's full blocks from index `first_block` into the tree, each under the
// previous block. Stops where the chain leaves the tree: below a private block, or where the
// tree already holds the same tokens in another block (that copy stays private).
void KvBlockManager::Publish(KvSequence& seq, int32_t first_block) {
  const int64_t full = static_cast<int64_t>(seq.tokens.size()) / block_size_;
  for (int64_t i = first_block; i < full; ++i) {
    const int32_t block = seq.blocks[i];
    if (blocks_[block].in_tree) continue;
    const int32_t parent = i == 0 ? kRoot : seq.blocks[i - 1];
    if (parent != kRoot && !blocks_[parent].in_tree) return;
    std::vector<int32_t> key(seq.tokens.begin() + i * block_size_,
                             seq.tokens.begin() + (i + 1) * block_size_);
    auto [it, inserted] = ChildrenOf(parent).try_emplace(std::move(key), block);
    if (!inserted) return;
    Block& b = blocks_[block];
    b.in_tree = true;
    b.parent = parent;
    b.key = it->first;
  }
}

absl::StatusOr<int32_t> KvBlockManager::Append(SeqId id, std::span<const int32_t> tokens) {
  ASSIGN_OR_RETURN(KvSequence * seq_ptr, Get(id));
  KvSequence& seq = *seq_ptr;
  if (tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("append to sequence ", id, ": no tokens"));
  }
  const int64_t old_len = seq.tokens.size();
  const int64_t new_len = old_len + static_cast<int64_t>(tokens.size());

  // Prefix-tree matches: whole blocks, never including the last token.
  std::vector<int32_t> matched;
  int64_t revived = 0;  // Matched blocks that are cached now (they stop being evictable).
  const bool aligned = old_len % block_size_ == 0;
  const int32_t tail = seq.blocks.empty() ? kRoot : seq.blocks.back();
  if (aligned && (tail == kRoot || blocks_[tail].in_tree)) {
    int32_t parent = tail;
    for (int64_t start = 0; start + block_size_ <= static_cast<int64_t>(tokens.size()) - 1;
         start += block_size_) {
      const std::vector<int32_t> key(tokens.begin() + start, tokens.begin() + start + block_size_);
      const Children& children = ChildrenOf(parent);
      auto it = children.find(key);
      if (it == children.end()) break;
      matched.push_back(it->second);
      revived += blocks_[it->second].refcount == 0;
      parent = it->second;
    }
  }
  const int64_t needed =
      CeilDiv(new_len, block_size_) - static_cast<int64_t>(seq.blocks.size() + matched.size());
  const int64_t available = static_cast<int64_t>(free_.size()) + cached_ - revived;
  if (needed > available) {
    return absl::ResourceExhaustedError(absl::StrCat("KV cache full: appending ", tokens.size(),
                                                     " tokens to sequence ", id, " needs ", needed,
                                                     " blocks, ", available, " can be freed"));
  }

  for (int32_t block : matched) {
    Ref(block);
    seq.blocks.push_back(block);
  }
  for (int64_t i = 0; i < needed; ++i) seq.blocks.push_back(Allocate());
  seq.tokens.insert(seq.tokens.end(), tokens.begin(), tokens.end());
  const int32_t hit = static_cast<int32_t>(matched.size()) * block_size_;
  hit_tokens_ += hit;
  Publish(seq, static_cast<int32_t>(old_len / block_size_));
  return hit;
}

absl::StatusOr<std::vector<BlockCopy>> KvBlockManager::Fork(SeqId parent_id, SeqId child_id,
                                                            int32_t len) {
  ASSIGN_OR_RETURN(const KvSequence* parent_ptr, Get(parent_id));
  const KvSequence& parent = *parent_ptr;
  if (len < 0 || len > static_cast<int64_t>(parent.tokens.size())) {
    return absl::InvalidArgumentError(absl::StrCat("fork of sequence ", parent_id, " at length ",
                                                   len, ": must be in [0, ", parent.tokens.size(),
                                                   "]"));
  }
  if (sequences_.contains(child_id)) {
    return absl::AlreadyExistsError(absl::StrCat("sequence id ", child_id, " already exists"));
  }
  const int32_t full = len / block_size_;
  const int32_t partial = len % block_size_;
  if (partial > 0 && free_.empty() && cached_ == 0) {
    return absl::ResourceExhaustedError(absl::StrCat("KV cache full: fork of sequence ", parent_id,
                                                     " needs a block for its partial tail"));
  }
  KvSequence child;
  child.tokens.assign(parent.tokens.begin(), parent.tokens.begin() + len);
  child.blocks.assign(parent.blocks.begin(), parent.blocks.begin() + full);
  for (int32_t block : child.blocks) Ref(block);
  std::vector<BlockCopy> copies;
  if (partial > 0) {
    const int32_t dst = Allocate();
    copies.push_back({parent.blocks[full], dst, partial});
    child.blocks.push_back(dst);
  }
  sequences_.emplace(child_id, std::move(child));
  return copies;
}

absl::StatusOr<std::vector<BlockCopy>> KvBlockManager::Truncate(SeqId id, int32_t len) {
  ASSIGN_OR_RETURN(KvSequence * seq_ptr, Get(id));
  KvSequence& seq = *seq_ptr;
  if (len < 0 || len > static_cast<int64_t>(seq.tokens.size())) {
    return absl::InvalidArgumentError(absl::StrCat("truncate of sequence ", id, " to length ", len,
                                                   ": must be in [0, ", seq.tokens.size(), "]"));
  }
  const int64_t keep = CeilDiv(len, block_size_);
  const int32_t partial = len % block_size_;
  const int32_t last = partial > 0 ? seq.blocks[keep - 1] : kRoot;
  const bool copy = last != kRoot && (blocks_[last].refcount > 1 || blocks_[last].in_tree);
  if (copy) {
    int64_t released = 0;  // Dropped blocks that become free or cached.
    for (size_t i = keep; i < seq.blocks.size(); ++i)
      released += blocks_[seq.blocks[i]].refcount == 1;
    if (static_cast<int64_t>(free_.size()) + cached_ + released == 0) {
      return absl::ResourceExhaustedError(absl::StrCat("KV cache full: truncate of sequence ", id,
                                                       " needs a block to copy its shared tail"));
    }
  }
  // Deepest first, so the tree's leaves get the oldest ticks and are evicted first.
  while (static_cast<int64_t>(seq.blocks.size()) > keep) {
    Unref(seq.blocks.back());
    seq.blocks.pop_back();
  }
  seq.tokens.resize(len);
  std::vector<BlockCopy> copies;
  if (copy) {
    const int32_t dst = Allocate();
    copies.push_back({last, dst, partial});
    seq.blocks.back() = dst;
    Unref(last);
  }
  return copies;
}

absl::Status KvBlockManager::Release(SeqId id) {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) return absl::NotFoundError(absl::StrCat("unknown sequence id ", id));
  const std::vector<int32_t>& blocks = it->second.blocks;
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) Unref(*b);
  sequences_.erase(it);
  return absl::OkStatus();
}

KvStats KvBlockManager::stats() const {
  KvStats s;
  s.total_blocks = num_blocks_;
  s.free_blocks = static_cast<int64_t>(free_.size());
  s.cached_blocks = cached_;
  s.used_blocks = num_blocks_ - s.free_blocks - s.cached_blocks;
  s.hit_tokens = hit_tokens_;
  s.evicted_blocks = evicted_;
  return s;
}

absl::Status KvBlockManager::CheckInvariants() const {
  auto fail = [](auto&&... parts) { return absl::InternalError(absl::StrCat(parts...)); };
  std::vector<int32_t> refs(num_blocks_, 0);
  for (const auto& [id, seq] : sequences_) {
    if (static_cast<int64_t>(seq.blocks.size()) != CeilDiv(seq.tokens.size(), block_size_)) {
      return fail("sequence ", id, " has ", seq.blocks.size(), " blocks for ", seq.tokens.size(),
                  " tokens");
    }
    for (size_t i = 0; i < seq.blocks.size(); ++i) {
      const int32_t block = seq.blocks[i];
      ++refs[block];
      const Block& b = blocks_[block];
      if (!b.in_tree) continue;
      const int32_t want_parent = i == 0 ? kRoot : seq.blocks[i - 1];
      if (b.parent != want_parent) return fail("sequence ", id, " block ", i, ": wrong parent");
      if (!std::equal(b.key.begin(), b.key.end(), seq.tokens.begin() + i * block_size_) ||
          static_cast<int32_t>(b.key.size()) != block_size_ ||
          static_cast<int64_t>(seq.tokens.size()) < static_cast<int64_t>(i + 1) * block_size_) {
        return fail("sequence ", id, " block ", i, ": tree key differs from its tokens");
      }
    }
    // The partial tail must be private: appends write into it.
    if (seq.tokens.size() % block_size_ != 0) {
      const Block& tail = blocks_[seq.blocks.back()];
      if (tail.in_tree || refs[seq.blocks.back()] > 1)
        return fail("sequence ", id, ": shared tail");
    }
  }
  std::vector<bool> is_free(num_blocks_, false);
  for (int32_t block : free_) {
    if (is_free[block]) return fail("block ", block, " twice in the free list");
    is_free[block] = true;
  }
  int64_t cached = 0, evictable = 0;
  for (int32_t block = 0; block < num_blocks_; ++block) {
    const Block& b = blocks_[block];
    if (b.refcount != refs[block]) {
      return fail("block ", block, ": refcount ", b.refcount, ", referenced ", refs[block],
                  " times");
    }
    if (is_free[block] != (b.refcount == 0 && !b.in_tree))
      return fail("block ", block, ": free list");
    cached += b.in_tree && b.refcount == 0;
    const bool want_evictable = b.in_tree && b.refcount == 0 && b.children.empty();
    if (b.evictable != want_evictable ||
        (want_evictable && !evictable_.contains({b.last_use, block}))) {
      return fail("block ", block, ": eviction list");
    }
    evictable += want_evictable;
    if (!b.in_tree) {
      if (!b.children.empty()) return fail("block ", block, ": children outside the tree");
      continue;
    }
    const Children& siblings = b.parent == kRoot ? root_children_ : blocks_[b.parent].children;
    auto it = siblings.find(b.key);
    if (it == siblings.end() || it->second != block) return fail("block ", block, ": not linked");
    if (b.parent != kRoot) {
      const Block& p = blocks_[b.parent];
      if (!p.in_tree) return fail("block ", block, ": parent outside the tree");
      if (p.refcount < b.refcount)
        return fail("block ", block, ": referenced more than its parent");
    }
    for (const auto& [key, child] : b.children) {
      if (blocks_[child].parent != block) return fail("block ", child, ": wrong parent link");
    }
  }
  for (const auto& [key, child] : root_children_) {
    if (blocks_[child].parent != kRoot || !blocks_[child].in_tree) return fail("root link ", child);
  }
  if (cached != cached_) return fail("cached count ", cached_, ", actual ", cached);
  if (evictable != static_cast<int64_t>(evictable_.size())) return fail("stale eviction entries");
  if (cached > 0 && evictable == 0) return fail("cached blocks but none evictable");
  return absl::OkStatus();
}

}  // namespace arbor::worker
