// The paged prefix-sharing KV cache as the engine uses it: the block bookkeeping
// (kv_block_manager.h) bound to a backend's K/V storage, so that the block copies required by
// fork and truncate (copy-on-write of a partial block) are always carried out before the
// bookkeeping is relied upon.
#ifndef ARBOR_WORKER_KV_CACHE_H_
#define ARBOR_WORKER_KV_CACHE_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/backend.h"
#include "worker/kv_block_manager.h"

namespace arbor::worker {

class KvCache {
 public:
  // Sized by the backend's KV pools; `backend` must outlive this.
  explicit KvCache(Backend* backend);

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
  Backend* backend_;
  KvBlockManager blocks_;
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_KV_CACHE_H_
