#include "coordinator/cluster/routing.h"

#include <algorithm>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"

namespace arbor::coordinator {

double LoadScore(const RoutingCandidate& c, const RoutingOptions& options) {
  return static_cast<double>(c.live_sequences + c.jobs_since_report) +
         static_cast<double>(c.queued_tokens) /
             static_cast<double>(std::max<int64_t>(1, options.tokens_per_load_unit));
}

std::vector<uint64_t> PrefixBlockHashes(absl::Span<const int32_t> tokens, int block_size,
                                        int max_blocks) {
  std::vector<uint64_t> hashes;
  if (block_size <= 0) return hashes;
  const size_t blocks = std::min<size_t>(tokens.size() / block_size, std::max(0, max_blocks));
  uint64_t chain = 0;
  for (size_t b = 0; b < blocks; ++b) {
    // Chaining makes a block's hash depend on every token before it, like the radix cache.
    chain = absl::HashOf(chain, tokens.subspan(b * block_size, block_size));
    hashes.push_back(chain);
  }
  return hashes;
}

void PrefixAffinity::Record(absl::Span<const uint64_t> hashes, const std::string& worker_id,
                            absl::Time now) {
  for (uint64_t h : hashes) {
    auto it = entries_.find(h);
    if (it != entries_.end()) {
      lru_.erase(it->second.lru);
      entries_.erase(it);
    }
    lru_.push_front(h);
    entries_.emplace(h, Entry{worker_id, now, lru_.begin()});
  }
  while (entries_.size() > capacity_ && !lru_.empty()) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
}

PrefixAffinity::Match PrefixAffinity::Longest(
    absl::Span<const uint64_t> hashes, const absl::flat_hash_set<std::string>& allowed) const {
  // Blocks are chained, so the deepest recorded hash is the longest shared prefix.
  for (size_t i = hashes.size(); i > 0; --i) {
    auto it = entries_.find(hashes[i - 1]);
    if (it != entries_.end() && allowed.contains(it->second.worker_id)) {
      return {it->second.worker_id, static_cast<int>(i), it->second.recorded};
    }
  }
  return {};
}

void PrefixAffinity::ForgetWorker(const std::string& worker_id) {
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto entry = entries_.find(*it);
    if (entry->second.worker_id == worker_id) {
      entries_.erase(entry);
      it = lru_.erase(it);
    } else {
      ++it;
    }
  }
}

namespace {

// The worker reported its cache after receiving the prefix and holds fewer blocks than the
// match: it evicted them or restarted, so the affinity is stale.
bool CacheConfirms(const RoutingCandidate& c, const PrefixAffinity::Match& match) {
  return !(c.report_time > match.recorded && c.resident_blocks < match.blocks);
}

bool CacheTooFull(const RoutingCandidate& c, const RoutingOptions& options) {
  return c.total_blocks > 0 && static_cast<double>(c.used_blocks) >
                                   options.max_cache_fill * static_cast<double>(c.total_blocks);
}

}  // namespace

absl::StatusOr<RoutingDecision> ChooseWorker(absl::Span<const RoutingCandidate> candidates,
                                             absl::Span<const uint64_t> prefix,
                                             const absl::flat_hash_set<std::string>& exclude,
                                             const PrefixAffinity& affinity,
                                             const RoutingOptions& options) {
  absl::flat_hash_set<std::string> allowed;
  const RoutingCandidate* least = nullptr;
  int not_ready = 0;
  int excluded = 0;
  for (const RoutingCandidate& c : candidates) {
    if (exclude.contains(c.worker_id)) {
      ++excluded;
      continue;
    }
    if (!c.ready) {
      ++not_ready;
      continue;
    }
    allowed.insert(c.worker_id);
    // Ties go to the lexicographically smaller id so routing is deterministic.
    if (least == nullptr || LoadScore(c, options) < LoadScore(*least, options) ||
        (LoadScore(c, options) == LoadScore(*least, options) && c.worker_id < least->worker_id)) {
      least = &c;
    }
  }
  if (least == nullptr) {
    return absl::UnavailableError(absl::StrCat("no worker can take the job: ", candidates.size(),
                                               " known, ", not_ready, " not ready, ", excluded,
                                               " excluded after failing this job"));
  }
  const PrefixAffinity::Match match = affinity.Longest(prefix, allowed);
  if (match.blocks > 0) {
    for (const RoutingCandidate& c : candidates) {
      if (c.worker_id != match.worker_id) continue;
      if (LoadScore(c, options) <= LoadScore(*least, options) + options.affinity_slack &&
          CacheConfirms(c, match) && !CacheTooFull(c, options)) {
        return RoutingDecision{c.worker_id, match.blocks};
      }
    }
  }
  return RoutingDecision{least->worker_id, 0};
}

}  // namespace arbor::coordinator
