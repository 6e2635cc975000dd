// Checks of a Run request that need no engine state: counts, ranges and token ids against the
// served model. Every failure is INVALID_ARGUMENT naming the item and field (docs/ARCHITECTURE.md
// §7).
#ifndef ARBOR_WORKER_ENGINE_RUN_VALIDATION_H_
#define ARBOR_WORKER_ENGINE_RUN_VALIDATION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "arbor/v1/worker.pb.h"
#include "entropix/policy_config.h"

namespace arbor::worker {

struct RunLimits {
  int32_t vocab_size = 0;
  int32_t max_context = 0;
  int32_t max_top_k = 256;
  int32_t max_items = entropix::kMaxRolloutsInFlight;  // What a search plans within.
  int32_t max_steps = 4096;
};

absl::Status ValidateRunRequest(const v1::RunRequest& request, const RunLimits& limits);

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_ENGINE_RUN_VALIDATION_H_
