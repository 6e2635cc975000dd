// What the KV cache needs of whoever holds the K/V tensors: the pools' shape and the block
// copies that copy-on-write asks for. Backends implement it (backend/backend.h); the KV
// bookkeeping sees no more of them, so the cache sits below the backends.
#ifndef ARBOR_WORKER_KV_KV_STORAGE_H_
#define ARBOR_WORKER_KV_KV_STORAGE_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "worker/kv/kv_block_manager.h"

namespace arbor::worker {

class KvStorage {
 public:
  virtual ~KvStorage() = default;

  // Per layer, K and V pools of kv_num_blocks() blocks of kv_block_size() slots each.
  virtual int32_t kv_num_blocks() const = 0;
  virtual int32_t kv_block_size() const = 0;

  // Performs the KV cache's copies (every layer, K and V) in order.
  virtual absl::Status CopyKvBlocks(std::span<const BlockCopy> copies) = 0;
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_KV_KV_STORAGE_H_
