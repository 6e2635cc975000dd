// The paged prefix-sharing KV cache as the engine uses it: the block bookkeeping
// (kv_block_manager.h) bound to the K/V storage (kv_storage.h), so that the block copies
// required by fork and truncate (copy-on-write of a partial block) are always carried out before
// the bookkeeping is relied upon.
#ifndef ARBOR_WORKER_KV_KV_CACHE_H_
#define ARBOR_WORKER_KV_KV_CACHE_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/kv/kv_block_manager.h"
#include "worker/kv/kv_storage.h"

namespace arbor::worker {

class KvCache {
 public:
  // Sized by the storage's pools; `storage` must outlive this.
  explicit KvCache(KvStorage* storage);

  absl::Status Create(SeqId id) { return blocks_.Create(id); }
  // See KvBlockManager::Append: returns how many leading tokens came from the prefix tree.
  absl::StatusOr<int32_t> Append(SeqId id, std::span<const int32_t> tokens) {
    return blocks_.Append(id, tokens);
  }
  absl::Status Fork(SeqId parent, SeqId child, int32_t len);
  absl::Status Truncate(SeqId id, int32_t len);
  absl::Status Release(SeqId id) { return blocks_.Release(id); }

  absl::StatusOr<const KvSequence*> Find(SeqId id) const { return blocks_.Find(id); }
  KvStats stats() const { return blocks_.stats(); }
  const KvBlockManager& blocks() const { return blocks_; }

 private:
  KvStorage* storage_;
  KvBlockManager blocks_;
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_KV_KV_CACHE_H_
