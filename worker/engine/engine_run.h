// The engine's record of a run being executed and of one row of a forward step: shared by the
// engine's admission and bookkeeping (engine.cc) and its forward step (engine_step.cc). Include
// only from those.
#ifndef ARBOR_WORKER_ENGINE_ENGINE_RUN_H_
#define ARBOR_WORKER_ENGINE_ENGINE_RUN_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "arbor/v1/worker.pb.h"
#include "worker/backend/row_reduction.h"
#include "worker/engine/engine.h"
#include "worker/engine/item_run.h"

namespace arbor::worker {

// A run being executed: its items and what is needed to undo its preparation.
struct Engine::ActiveRun {
  std::vector<ItemRun> items;
  // What a failed run restores: items [0, prepared) were prepared; a sequence the run created
  // (or forked) goes, any other returns to its length (after truncate_to) and flag before it.
  size_t prepared = 0;
  std::vector<bool> created;
  std::vector<int32_t> length_before;
  std::vector<bool> last_sampled_before;
  std::vector<int32_t> cached_tokens;  // Prefix-cache hits per item.
  std::function<bool()> cancelled;
  RunCallback done;
  ProgressCallback progress;                        // Null: the run reports only when it answers.
  std::vector<int32_t> reported;                    // Per item: steps already sent as progress.
  absl::Time next_progress = absl::InfinitePast();  // No progress before this.
  uint64_t owner = 0;  // RunRequest.owner_epoch: owns the sequences the run creates.
  std::string job_id;  // RunRequest.job_id: whose share of a crowded step the run's rows take.
  v1::RunTimings timings;
  bool failed = false;
  absl::Status failure;
};

// The active runs of one job in a step, and the rows they want in it: one token for each
// decoding item, and the tokens of each other item (Engine::TokensWanted), in that order.
struct Engine::JobRows {
  std::vector<ActiveRun*> runs;
  int32_t decode_rows = 0;
  std::vector<int32_t> prefill_tokens;

  // The tokens of the first `n` rows.
  int32_t TokensOfRows(int32_t n) const {
    int32_t tokens = std::min(n, decode_rows);
    for (int32_t r = 0; r < n - decode_rows && r < static_cast<int32_t>(prefill_tokens.size());
         ++r) {
      tokens += prefill_tokens[r];
    }
    return tokens;
  }
};

// One row of a forward step and where its outputs go.
struct Engine::Row {
  ActiveRun* run = nullptr;
  size_t item = 0;
  bool prefill = false;
  std::vector<int32_t> tokens;
  int32_t start_pos = 0;
  bool distribution = false;  // Whether the row's next-token distribution is wanted.
  // A scoring row: the token its distribution scores (the sequence's next one), else -1.
  int32_t scored_token = -1;
  // What the backend reduces the distribution to, when it is wanted.
  RowReduction reduction;
  // Tokens to append to the sequence, or the failure of the row's metrics and policy.
  absl::StatusOr<std::vector<int32_t>> appended;
  // A scoring row's step, or the failure of its metrics.
  absl::StatusOr<v1::StepResult> scored;

  int32_t keys() const { return start_pos + static_cast<int32_t>(tokens.size()); }
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_ENGINE_ENGINE_RUN_H_
