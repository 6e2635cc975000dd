// The decision matrix of docs/ARCHITECTURE.md §4.2: from one step's metrics, the policy and the
// job's budgets, which strategy to take and with which adjusted sampling parameters. Pure and
// deterministic, so the worker's local policy and the coordinator always agree.
//
//  # | condition              | SEARCH (default)               | CANONICAL
//  1 | H < 0.1 and V < 0.1    | ARGMAX                         | ARGMAX
//  2 | H > 5.0 and V < 0.1    | INSERT, else HOT_SAMPLE        | INSERT, else HOT_SAMPLE
//  3 | H < 5.0 and V > 5.0    | BRANCH, else BRANCH_SAMPLE     | BRANCH_SAMPLE
//  4 | H > 3.0 and V > 5.0    | BACKSPACE, else RESAMPLE       | RESAMPLE
//  5 | otherwise              | ADAPTIVE                       | ADAPTIVE
// (first match wins; thresholds from PolicyConfig). SEARCH blocks INSERT by insert.cooldown and
// insert.max_per_job, BRANCH by branch.max_depth, BACKSPACE by backspace.max_per_job or when the
// previous token cannot be backspaced. CANONICAL only blocks INSERT right after the thinking
// token itself (the original sampler's one-token cooldown). TRACE has no matrix: BRANCH (blocked
// by trace.max_depth) at the first generated token when trace.fork_first, or where
// H > trace.fork_entropy; ARGMAX everywhere else.
#ifndef ARBOR_ENTROPIX_DECISION_H_
#define ARBOR_ENTROPIX_DECISION_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "entropix/metrics.h"
#include "entropix/policy_config.h"
#include "entropix/strategy.h"

namespace arbor::entropix {

// ADAPTIVE's upper clip of top_k: the canonical sampler's bound, and so the most candidates an
// ADAPTIVE step can ask for (candidates.h).
inline constexpr int32_t kAdaptiveTopKMax = 100;

// What the budgets need, aligned with arbor.v1.RunItem.
struct DecisionContext {
  int32_t position = 0;               // Position of the token about to be drawn (0-based).
  int32_t inserts_used = 0;           // INSERT budget the job already spent.
  int32_t backspaces_used = 0;        // BACKSPACE budget the job already spent.
  int32_t last_insert_position = -1;  // Position of the job's last inserted token, −1 if none.
  int32_t branch_depth = 0;           // Nesting depth of this sequence (0 = main path).
  int32_t generated = 0;              // Tokens generated before this one (0: the first).
  // The previous token was generated (not prompt, not inserted, not forced) and its position
  // has not been backspaced before: BACKSPACE may remove it.
  bool previous_backspaceable = false;
  // CANONICAL: the previous token is the thinking token (inserted or sampled).
  bool previous_is_insert_token = false;
};

enum class MatrixRow { kLelv = 1, kHelv = 2, kLehv = 3, kHehv = 4, kAdaptive = 5 };

// Why a structural strategy was not taken.
enum class BlockReason {
  kNone,
  kCooldown,          // INSERT within insert.cooldown tokens (CANONICAL: right after one).
  kBudget,            // insert.max_per_job or backspace.max_per_job spent.
  kDepth,             // branch_depth ≥ branch.max_depth.
  kNotBackspaceable,  // The previous token is a prompt/inserted token or was backspaced already.
};
absl::string_view BlockReasonName(BlockReason reason);

struct Decision {
  Strategy strategy = Strategy::kArgmax;
  MatrixRow row = MatrixRow::kLelv;
  // The row's adjusted parameters. For a structural strategy they define its distribution: the
  // BRANCH candidates (LEHV), the BACKSPACE re-draw (HEHV), or the INSERT fallback (HELV).
  SamplingParams sampling;
  int32_t n_samples = 1;  // ADAPTIVE: adaptive.n_samples (best kept); otherwise 1.
  // The sampling strategy of the same row, taken when a structural strategy is not applied
  // (equals `strategy` when that is not structural).
  Strategy fallback = Strategy::kArgmax;
  // The structural strategy the row asked for but could not take, and why (kNone when none).
  BlockReason blocked_by = BlockReason::kNone;
  Strategy blocked_strategy = Strategy::kArgmax;  // Meaningful only when blocked_by != kNone.
  std::vector<int32_t> insert_tokens;  // INSERT: the tokens to append (config's insert.tokens).
};

// Applies the matrix. `config` must be valid (PolicyConfig::Validate).
Decision Decide(const Metrics& metrics, const PolicyConfig& config, const DecisionContext& context);

// The metric part of the ADAPTIVE score, the same for every sample of a step:
// w_e(1−H) + w_ae(1−attn_ent) + w_v(1−V) + w_av(1−attn_vent) + w_agr·agreement + w_is·IS.
double ConfidenceTerm(const Metrics& metrics, const AdaptiveOptions& weights);

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_DECISION_H_
