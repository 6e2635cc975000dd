// The engine's view of its sequences: each is the tokens whose K/V sit in the KV cache followed by
// *pending* tokens that belong to the sequence but have not been through the model yet (the
// token a decode step just sampled, or tokens appended by a Run). Keeping the sampled token
// pending, rather than running the model on it at once, means a run that ends — or a sequence
// the coordinator backspaces or forks — never pays for a forward pass nobody needs.
//
// Not thread-safe: the engine's scheduling thread owns it.
#ifndef ARBOR_WORKER_KV_SEQUENCE_STORE_H_
#define ARBOR_WORKER_KV_SEQUENCE_STORE_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "worker/kv/kv_cache.h"

namespace arbor::worker {

struct SequenceState {
  std::vector<int32_t> pending;  // Tokens after the cached ones, not yet forwarded.
  // The last token was sampled by a decode step (not prompt, appended, forced or re-drawn), so
  // the policy may BACKSPACE it.
  bool last_sampled = false;
  bool busy = false;  // Part of a run in progress.
  // The coordinator epoch that created it (RunRequest.owner_epoch; 0: none), so that the
  // sequences of a coordinator that is gone can be found and released.
  uint64_t owner = 0;
};

class SequenceStore {
 public:
  explicit SequenceStore(KvCache* kv) : kv_(kv) {}

  bool Contains(uint64_t id) const { return states_.contains(id); }
  // NOT_FOUND naming the id.
  absl::StatusOr<SequenceState*> Get(uint64_t id);
  // Cached + pending tokens.
  int32_t Length(uint64_t id) const;
  int32_t CachedLength(uint64_t id) const;
  // Token at `position` (cached or pending); the position must be < Length(id).
  int32_t TokenAt(uint64_t id, int32_t position) const;

  absl::Status Create(uint64_t id);
  // `child` gets the first `length` tokens of `parent`; full KV blocks are shared.
  absl::Status Fork(uint64_t parent, uint64_t child, int32_t length);
  // Keeps the first `length` tokens.
  absl::Status Truncate(uint64_t id, int32_t length);
  // Drops the sequence; its full blocks stay cached for prefix reuse.
  absl::Status Release(uint64_t id);

  // Moves up to `max_tokens` pending tokens into the KV cache and returns (tokens the model
  // must run, their first position); prefix-cache hits are skipped. `hits` receives how many
  // tokens came from the prefix cache. RESOURCE_EXHAUSTED with nothing changed when full.
  struct Chunk {
    std::vector<int32_t> tokens;
    int32_t start_pos = 0;
    int32_t hits = 0;
  };
  absl::StatusOr<Chunk> TakePending(uint64_t id, int32_t max_tokens);

  // Makes the model's next-token distributions before the last `before_last` pending tokens and
  // after the last computable: when fewer than before_last + 1 tokens are pending, the last
  // cached token is dropped from the cache and becomes pending again (its logits were not
  // kept). FAILED_PRECONDITION when the sequence has no token to give.
  absl::Status EnsurePending(uint64_t id, int32_t before_last = 0);

  int64_t size() const { return static_cast<int64_t>(states_.size()); }
  // The ids of the sequences `owner` created.
  std::vector<uint64_t> OwnedBy(uint64_t owner) const;

 private:
  KvCache* kv_;
  absl::flat_hash_map<uint64_t, SequenceState> states_;
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_KV_SEQUENCE_STORE_H_
