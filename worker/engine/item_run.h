// One RunItem as the engine executes it: the checked request, the policy resolved against the
// worker's defaults, the decision context carried from step to step, and the result being built.
// OnDistribution() is the per-step heart of the worker: from the backend's reduction of the row
// (row_reduction.h: metrics, candidates, attention statistics), the local entropix policy, the
// sampled token, and whether the item stops here (docs/ARCHITECTURE.md §1 step 3).
#ifndef ARBOR_WORKER_ENGINE_ITEM_RUN_H_
#define ARBOR_WORKER_ENGINE_ITEM_RUN_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "arbor/v1/worker.pb.h"
#include "entropix/decision.h"
#include "entropix/logit_processors.h"
#include "entropix/policy_config.h"
#include "entropix/trace_confidence.h"
#include "grammar/constraint.h"
#include "worker/backend/row_reduction.h"

namespace arbor::worker {

// Model facts every item needs.
struct ItemLimits {
  int32_t vocab_size = 0;
  int32_t max_context = 0;
  std::vector<int32_t> eos_token_ids;
};

class ItemRun {
 public:
  // `policy` and `processors` are the item's, already resolved and validated; `constraint` is
  // its compiled RunItem.constraint, or null.
  ItemRun(const v1::RunItem& item, entropix::PolicyConfig policy,
          entropix::LogitProcessorConfig processors, const ItemLimits& limits,
          std::shared_ptr<grammar::CompiledConstraint> constraint = nullptr);

  const v1::RunItem& item() const { return item_; }
  uint64_t sequence_id() const { return item_.sequence_id(); }
  bool done() const { return done_; }
  // Decode steps still allowed (0 once done).
  int32_t steps_left() const { return done_ ? 0 : item_.max_steps() - steps_done_; }
  // Appended tokens still to be scored (RunItem.score_tokens), the last ones of the sequence.
  int32_t scores_left() const { return done_ ? 0 : item_.score_tokens() - scored_; }

  // Called once the sequence is prepared, with its length, its last token (-1 when empty) and
  // whether that token was sampled (so the policy may backspace it). `token_at(p)` gives the token
  // at position p < length (read only when the item has logit processors or a constraint).
  void Begin(int32_t length, int32_t last_token, bool last_sampled,
             absl::FunctionRef<int32_t(int32_t)> token_at);

  // What the backend must reduce this item's next distribution to: a decode step's candidates
  // (the policy's largest top_k plus the position's bans, and the reported top-K), CANONICAL's
  // thinking token as the probe, the policy's attention mode.
  // The step's logit adjustments (RunItem.processors) and constraint mask ride along; they stay
  // valid until the item's next OnDistribution.
  ReductionRequest DecodeRequest();
  // The same for a teacher-forced row scoring `token` (its logit and rank are probed).
  ReductionRequest ScoreRequest(int32_t token) const;

  // One step from the reduced next-token distribution after the sequence's `length` tokens
  // (asked for with DecodeRequest). Returns the tokens to append to the sequence (empty when the
  // item stops without a token).
  absl::StatusOr<std::vector<int32_t>> OnDistribution(const RowReduction& row);

  // Teacher-forced scoring: the step result of `token` at `position` under `row` (the reduction,
  // asked for with ScoreRequest, after the first `position` tokens). Const, so the rows of one
  // item may be scored concurrently; AddScored then records them in position order.
  absl::StatusOr<v1::StepResult> ScoreStep(const RowReduction& row, int32_t position,
                                           int32_t token) const;
  void AddScored(v1::StepResult step);

  // Ends the item early (cancellation, KV exhaustion), or a prefill-only item once its tokens
  // are in (STOP_REASON_MAX_STEPS).
  void Stop(v1::StopReason reason);
  // How many of the result's leading steps can no longer change: all once the item is done;
  // before that, all but the last when the next step may still give it its top-K (a SEARCH
  // BACKSPACE's re-draw distribution, AttachPreviousTopK).
  int32_t FinalSteps() const {
    const int32_t steps = result_.steps_size();
    return done_ || !keep_previous_top_k_ ? steps : std::max(0, steps - 1);
  }
  // The result; `length` and `cached_tokens` are filled by the engine.
  v1::RunResult& result() { return result_; }

 private:
  // Whether `token` ends the item (stop token), applying the policy's stop conditions.
  bool IsStopToken(int32_t token) const;
  // Tracks "back within bounds" for branch rollouts.
  bool CalmAfter(const entropix::Metrics& metrics);
  // DeepConf's early stop (RunItem.stop_below_confidence): feeds the sampled token's confidence
  // and says whether the window's mean fell below the threshold.
  bool ConfidenceFell(const RowReduction& row);
  std::vector<int32_t> BannedAt(int32_t position) const;
  void Finish(v1::StopReason reason);
  // Feeds a step's appended tokens, at the positions from length_ on, to the logit processors
  // and the constraint; an error when the constraint refuses one.
  absl::Status FeedAppended(const std::vector<int32_t>& appended);
  // After a step appended its tokens: finishes the item on the first stop condition that holds.
  // `sampled`: the step drew its token, so it counts towards DeepConf's confidence.
  void FinishIfStopping(const RowReduction& row, const entropix::Metrics& metrics, bool sampled);
  // On a BACKSPACE stop: gives the previous step its top-K, the distribution the coordinator
  // re-draws the removed token from.
  void AttachPreviousTopK();

  v1::RunItem item_;
  entropix::PolicyConfig policy_;
  entropix::LogitProcessorState processors_;  // Fed every token of the sequence.
  // RunItem.constraint: fed the output's tokens; the mask of the next step; why the sequence
  // cannot go on under it (its output left the grammar), failing the item's next step.
  std::optional<grammar::ConstraintState> constraint_;
  std::vector<int32_t> end_tokens_;  // What may end a constrained output: eos and stop ids.
  grammar::TokenBits allowed_;
  int32_t allowed_count_ = 0;
  absl::Status constraint_status_;
  ItemLimits limits_;
  entropix::DecisionContext context_;
  int32_t length_ = 0;
  int32_t first_generated_ = 0;  // Sequence position of the job's first generated token.
  int32_t last_token_ = -1;
  int32_t steps_done_ = 0;
  int32_t scored_ = 0;
  int32_t calm_streak_ = 0;
  std::optional<entropix::GroupConfidence> confidence_;  // Set when the item may stop on it.
  bool done_ = false;
  // SEARCH items that may stop on BACKSPACE keep each step's top-K until the next step, so the
  // re-draw distribution travels with the stop instead of with every step.
  bool keep_previous_top_k_ = false;
  std::vector<entropix::TokenLogprob> previous_top_k_;
  v1::RunResult result_;
};

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_ENGINE_ITEM_RUN_H_
