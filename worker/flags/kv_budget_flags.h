// A worker's KV budget as its command line gives it (--kv_tokens, --kv_memory): defined once, for
// arbor-worker and for `arbor up`, which hands the budget on to the workers it starts.
#ifndef ARBOR_WORKER_FLAGS_KV_BUDGET_FLAGS_H_
#define ARBOR_WORKER_FLAGS_KV_BUDGET_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace arbor::worker {

// The share of the host's available memory a worker's KV pool takes without --kv_memory.
inline constexpr int kDefaultKvMemoryPercent = 50;

struct KvBudget {
  int64_t tokens = 0;  // The pool's tokens; 0: what `memory` holds.
  // A size ("4GiB") or a share of the available memory ("40%", base/memory_size.h); empty: the
  // worker's default (kDefaultKvMemoryPercent).
  std::string memory;
};

// --kv_tokens and --kv_memory; INVALID_ARGUMENT naming the flag for a negative --kv_tokens.
absl::StatusOr<KvBudget> KvBudgetFromFlags();

// The arguments that give a started worker `budget`: a flag for each field that is set.
std::vector<std::string> KvBudgetArgs(const KvBudget& budget);

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_FLAGS_KV_BUDGET_FLAGS_H_
