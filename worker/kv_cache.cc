#include "worker/kv_cache.h"

#include "base/status_macros.h"

namespace arbor::worker {

KvCache::KvCache(Backend* backend)
    : backend_(backend), blocks_(backend->kv_num_blocks(), backend->kv_block_size()) {}

absl::Status KvCache::Fork(SeqId parent, SeqId child, int32_t len) {
  ASSIGN_OR_RETURN(const std::vector<BlockCopy> copies, blocks_.Fork(parent, child, len));
  return backend_->CopyKvBlocks(copies);
}

absl::Status KvCache::Truncate(SeqId id, int32_t len) {
  ASSIGN_OR_RETURN(const std::vector<BlockCopy> copies, blocks_.Truncate(id, len));
  return backend_->CopyKvBlocks(copies);
}

}  // namespace arbor::worker
