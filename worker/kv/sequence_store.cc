#include "worker/kv/sequence_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace arbor::worker {

absl::StatusOr<SequenceState*> SequenceStore::Get(uint64_t id) {
  auto it = states_.find(id);
  if (it == states_.end()) {
    return absl::NotFoundError(absl::StrCat("sequence ", id, " does not exist on this worker"));
  }
  return &it->second;
}

int32_t SequenceStore::CachedLength(uint64_t id) const {
  absl::StatusOr<const KvSequence*> seq = kv_->Find(static_cast<SeqId>(id));
  return seq.ok() ? static_cast<int32_t>((*seq)->tokens.size()) : 0;
}

int32_t SequenceStore::Length(uint64_t id) const {
  auto it = states_.find(id);
  if (it == states_.end()) return 0;
  return CachedLength(id) + static_cast<int32_t>(it->second.pending.size());
}

int32_t SequenceStore::TokenAt(uint64_t id, int32_t position) const {
  const int32_t cached = CachedLength(id);
  if (position < cached) return (*kv_->Find(static_cast<SeqId>(id)))->tokens[position];
  return states_.at(id).pending[position - cached];
}

absl::Status SequenceStore::Create(uint64_t id) {
  RETURN_IF_ERROR(kv_->Create(static_cast<SeqId>(id)));
  states_[id] = SequenceState{};
  return absl::OkStatus();
}

absl::Status SequenceStore::Fork(uint64_t parent, uint64_t child, int32_t length) {
  ASSIGN_OR_RETURN(SequenceState * from, Get(parent));
  const int32_t cached = CachedLength(parent);
  RETURN_IF_ERROR(
      kv_->Fork(static_cast<SeqId>(parent), static_cast<SeqId>(child), std::min(length, cached)));
  SequenceState state;
  if (length > cached) {
    state.pending.assign(from->pending.begin(), from->pending.begin() + (length - cached));
  }
  state.last_sampled = from->last_sampled && length == Length(parent);
  states_[child] = std::move(state);
  return absl::OkStatus();
}

absl::Status SequenceStore::Truncate(uint64_t id, int32_t length) {
  ASSIGN_OR_RETURN(SequenceState * state, Get(id));
  const int32_t cached = CachedLength(id);
  if (length <= cached) {
    RETURN_IF_ERROR(kv_->Truncate(static_cast<SeqId>(id), length));
    state->pending.clear();
  } else {
    state->pending.resize(length - cached);
  }
  state->last_sampled = false;
  return absl::OkStatus();
}

absl::Status SequenceStore::Release(uint64_t id) {
  if (!states_.contains(id)) return Get(id).status();
  RETURN_IF_ERROR(kv_->Release(static_cast<SeqId>(id)));
  states_.erase(id);
  return absl::OkStatus();
}

absl::StatusOr<SequenceStore::Chunk> SequenceStore::TakePending(uint64_t id, int32_t max_tokens) {
  ASSIGN_OR_RETURN(SequenceState * state, Get(id));
  const int32_t n = std::min<int32_t>(max_tokens, static_cast<int32_t>(state->pending.size()));
  Chunk chunk;
  chunk.start_pos = CachedLength(id);
  if (n == 0) return chunk;
  std::span<const int32_t> taken(state->pending.data(), n);
  ASSIGN_OR_RETURN(chunk.hits, kv_->Append(static_cast<SeqId>(id), taken));
  chunk.tokens.assign(taken.begin() + chunk.hits, taken.end());
  chunk.start_pos += chunk.hits;
  state->pending.erase(state->pending.begin(), state->pending.begin() + n);
  return chunk;
}

absl::Status SequenceStore::EnsurePending(uint64_t id, int32_t before_last) {
  ASSIGN_OR_RETURN(SequenceState * state, Get(id));
  if (static_cast<int32_t>(state->pending.size()) > before_last) return absl::OkStatus();
  const int32_t cached = CachedLength(id);
  if (cached == 0 || static_cast<int32_t>(state->pending.size()) < before_last) {
    return absl::FailedPreconditionError(
        absl::StrCat("sequence ", id, " has no token before the ", before_last,
                     " scored ones: append tokens before decoding or scoring"));
  }
  const int32_t last = TokenAt(id, cached - 1);
  RETURN_IF_ERROR(kv_->Truncate(static_cast<SeqId>(id), cached - 1));
  state->pending.insert(state->pending.begin(), last);
  return absl::OkStatus();
}

std::vector<uint64_t> SequenceStore::OwnedBy(uint64_t owner) const {
  std::vector<uint64_t> ids;
  for (const auto& [id, state] : states_) {
    if (state.owner == owner) ids.push_back(id);
  }
  return ids;
}

}  // namespace arbor::worker
