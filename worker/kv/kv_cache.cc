#include "worker/kv/kv_cache.h"

#include "base/status_macros.h"

namespace arbor::worker {

KvCache::KvCache(KvStorage* storage)
    : storage_(storage), blocks_(storage->kv_num_blocks(), storage->kv_block_size()) {}

absl::Status KvCache::Fork(SeqId parent, SeqId child, int32_t len) {
  ASSIGN_OR_RETURN(const std::vector<BlockCopy> copies, blocks_.Fork(parent, child, len));
  return storage_->CopyKvBlocks(copies);
}

absl::Status KvCache::Truncate(SeqId id, int32_t len) {
  ASSIGN_OR_RETURN(const std::vector<BlockCopy> copies, blocks_.Truncate(id, len));
  return storage_->CopyKvBlocks(copies);
}

}  // namespace arbor::worker
