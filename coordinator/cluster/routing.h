// Which worker a new job goes to (docs/ARCHITECTURE.md §1 step 2). Prefix affinity first: a worker
// that recently received a prompt with the same leading KV blocks probably still holds them in its
// radix cache, so prefill there is nearly free. Otherwise (or when that worker is overloaded)
// the least-loaded READY worker. Pure logic, no locks and no I/O: the WorkerPool owns the state
// and calls in here under its mutex.
#ifndef ARBOR_COORDINATOR_CLUSTER_ROUTING_H_
#define ARBOR_COORDINATOR_CLUSTER_ROUTING_H_

#include <cstdint>
#include <list>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace arbor::coordinator {

// What routing needs to know about one worker.
struct RoutingCandidate {
  std::string worker_id;
  bool ready = false;             // READY: may receive new jobs.
  int64_t live_sequences = 0;     // From the last HealthResponse.
  int64_t queued_tokens = 0;      // From the last HealthResponse.
  int64_t jobs_since_report = 0;  // Jobs homed here after that report (not yet in its numbers).
  int64_t total_blocks = 0;       // KV cache blocks (0 = unknown).
  int64_t used_blocks = 0;        // Referenced by live sequences at the last report.
  int64_t resident_blocks = 0;    // Used + cached (evictable) blocks at the last report.
  absl::Time report_time = absl::InfinitePast();  // When the last HealthResponse arrived.
};

struct RoutingOptions {
  // Queued tokens that weigh as much as one live sequence in the load score.
  int64_t tokens_per_load_unit = 512;
  // An affine worker is preferred while its load is at most the least load plus this slack.
  double affinity_slack = 4;
  // Nor when live sequences pin more than this fraction of its KV blocks (it would answer
  // RESOURCE_EXHAUSTED or evict the very prefix we came for).
  double max_cache_fill = 0.95;
  // Leading blocks hashed per prompt; longer shared prefixes gain little more.
  int max_prefix_blocks = 64;
  // Prefix hashes remembered (LRU).
  size_t affinity_capacity = 16384;
};

// Load score of a worker: live sequences + jobs homed since its report + queued tokens scaled.
double LoadScore(const RoutingCandidate& candidate, const RoutingOptions& options);

// Chained hashes of the prompt's full leading blocks: element i identifies tokens
// [0, (i+1)·block_size). At most `max_blocks`; empty when the prompt is shorter than a block.
std::vector<uint64_t> PrefixBlockHashes(absl::Span<const int32_t> tokens, int block_size,
                                        int max_blocks);

// Remembers which worker most recently received each prefix block hash. Bounded LRU.
class PrefixAffinity {
 public:
  explicit PrefixAffinity(size_t capacity) : capacity_(capacity) {}

  // `worker_id` now holds every prefix in `hashes` (as returned by PrefixBlockHashes).
  void Record(absl::Span<const uint64_t> hashes, const std::string& worker_id, absl::Time now);

  struct Match {
    std::string worker_id;
    int blocks = 0;                              // Leading blocks matched.
    absl::Time recorded = absl::InfinitePast();  // When that worker received them.
  };
  // The longest recorded prefix of `hashes` whose worker is in `allowed`; blocks = 0 when none.
  Match Longest(absl::Span<const uint64_t> hashes,
                const absl::flat_hash_set<std::string>& allowed) const;

  // A worker died or restarted: its cache is gone.
  void ForgetWorker(const std::string& worker_id);

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string worker_id;
    absl::Time recorded;
    std::list<uint64_t>::iterator lru;
  };
  size_t capacity_;
  absl::flat_hash_map<uint64_t, Entry> entries_;
  std::list<uint64_t> lru_;  // Most recent first.
};

struct RoutingDecision {
  std::string worker_id;
  int affinity_blocks = 0;  // > 0 when chosen for its cached prefix.
};

// Picks a worker among READY candidates not in `exclude`. `prefix` = PrefixBlockHashes of the
// prompt. UNAVAILABLE (saying how many workers were excluded or not ready) when none qualifies.
absl::StatusOr<RoutingDecision> ChooseWorker(absl::Span<const RoutingCandidate> candidates,
                                             absl::Span<const uint64_t> prefix,
                                             const absl::flat_hash_set<std::string>& exclude,
                                             const PrefixAffinity& affinity,
                                             const RoutingOptions& options);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_CLUSTER_ROUTING_H_
