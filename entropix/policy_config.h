// The entropix policy: every threshold, coefficient and option of docs/ARCHITECTURE.md §4.2, with
// the canonical defaults. Mirrors message arbor.v1.PolicyConfig field for field (same names, same
// nesting); policy/policy_convert.h converts, so this library stays free of protobuf.
#ifndef ARBOR_ENTROPIX_POLICY_CONFIG_H_
#define ARBOR_ENTROPIX_POLICY_CONFIG_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "entropix/attention_metrics.h"

namespace arbor::entropix {

enum class PolicyMode {
  kSearch,     // Rows 2–4 become tree operations (branch, insert, backspace).
  kCanonical,  // The original single-path sampler: rows 2–4 adjust the sample; row 2 inserts.
  kTrace,      // Greedy traces forked where TraceOptions says; the most confident answer wins.
};

enum class BranchMode {
  kRollout,  // Each child rolls out independently.
  kBeam,     // Keep the best `width` by cumulative logprob at every step.
};

// Sampling parameters (docs/ARCHITECTURE.md §4.3); also the adjusted parameters a Decision carries.
struct SamplingParams {
  float temperature = 0.666f;  // (0, 10].
  float top_p = 0.90f;         // (0, 1].
  int32_t top_k = 27;          // [1, 1024].
  float min_p = 0.03f;         // [0, 1).
};

// Decision-matrix thresholds: entropies in bits, varentropies in bits².
struct Thresholds {
  float lelv_entropy = 0.1f;     // Row 1 (ARGMAX): H below...
  float lelv_varentropy = 0.1f;  // ...and V below.
  float helv_entropy = 5.0f;     // Row 2 (INSERT): H above...
  float helv_varentropy = 0.1f;  // ...and V below.
  float lehv_entropy = 5.0f;     // Row 3 (BRANCH): H below...
  float lehv_varentropy = 5.0f;  // ...and V above.
  float hehv_entropy = 3.0f;     // Row 4 (BACKSPACE): H above...
  float hehv_varentropy = 5.0f;  // ...and V above.
};

// Coefficients of the adjusted sampling parameters (canonical values).
struct Coefficients {
  float helv_temp_base = 1.3f;  // HELV T = min(cap, T0·(base + attn·attn_ent)).
  float helv_temp_attn = 0.2f;
  float helv_temp_cap = 1.5f;
  float lehv_temp_base = 1.2f;  // LEHV T = min(cap, T0·(base + is·IS)).
  float lehv_temp_is = 0.3f;
  float lehv_temp_cap = 1.5f;
  float lehv_top_k_agreement = 0.5f;  // top_k = max(min, int(top_k·(1 + c·(1 − agreement)))).
  int32_t lehv_top_k_min = 5;
  float hehv_temp_base = 2.0f;  // HEHV T = max(floor, T0·(base + v·attn_vent)).
  float hehv_temp_attn_vent = 0.5f;
  float hehv_temp_floor = 2.0f;
  float hehv_top_p_attn = 0.2f;  // top_p = max(min, top_p − c·attn_ent).
  float hehv_top_p_min = 0.5f;
  float ada_temp_logits = 0.3f;  // ADAPTIVE T = T0·(1 + a·(H+V) + b·(attn_ent+attn_vent) − c·agr).
  float ada_temp_attn = 0.2f;
  float ada_temp_agree = 0.2f;
  float ada_top_p_attn_vent = 0.1f;  // top_p·(1 + c·attn_vent), clipped to [0.1, 1].
  float ada_top_k_is = 0.3f;  // round(top_k·(1 + c·IS − d·agreement)), clipped [1, 100].
  float ada_top_k_agree = 0.2f;
  float ada_min_p_logits = 0.5f;  // min_p·(1 − c·(H+V)), clipped to [0.01, 0.5].
};

// Rollouts one search may run at once (nested branches' leaves): a worker Run's item limit.
inline constexpr int32_t kMaxRolloutsInFlight = 1024;

struct BranchOptions {
  int32_t width = 4;  // Children per branch point, [2, 64].
  BranchMode mode = BranchMode::kRollout;
  int32_t max_len = 32;           // Rollout tokens per child, [1, 1024].
  float calm_entropy = 2.0f;      // "Back within bounds": H below this...
  float calm_varentropy = 3.0f;   // ...and V below this...
  int32_t calm_steps = 2;         // ...for this many consecutive steps, [1, 64].
  int32_t max_depth = 1;          // Nested branch points allowed, [1, 8].
  float candidate_min_p = 0.02f;  // Candidates need p ≥ this·p_max, [0, 1).
};

struct InsertOptions {
  // Thinking tokens. Empty means "the model's ' ...' tokenized"; the caller resolves it with
  // the tokenizer before deciding (Llama 3: {2564}).
  std::vector<int32_t> tokens;
  int32_t cooldown = 16;    // Tokens since the last insert before another, [0, 4096].
  int32_t max_per_job = 4;  // [0, 1024].
};

struct BackspaceOptions {
  int32_t max_per_job = 8;  // [0, 1024].
};

struct AdaptiveOptions {
  int32_t n_samples = 5;           // Samples drawn, best kept, [1, 64].
  float w_entropy = 0.1f;          // Weight of (1 − H).
  float w_attn_entropy = 0.2f;     // Weight of (1 − attn_ent).
  float w_varentropy = 0.3f;       // Weight of (1 − V).
  float w_attn_varentropy = 0.4f;  // Weight of (1 − attn_vent).
  float w_agreement = 0.5f;        // Weight of agreement.
  float w_interaction = 0.6f;      // Weight of interaction strength.
};

// What a TRACE vote weighs an answer by: the mean top-1 − top-2 margin over the answer's tokens
// (CoT-decoding), or the trace's lowest group confidence (DeepConf, trace_confidence.h).
enum class TraceVote { kMargin, kGroupConfidence };

// TRACE mode (docs/ARCHITECTURE.md §4.5): where greedy traces fork, into what, and how the answer
// is chosen. Its own fork parameters, so a server default in one mode leaves the other's alone.
struct TraceOptions {
  int32_t width = 3;             // Candidates per fork: the most likely, [1, 64].
  float candidate_min_p = 0.1f;  // Candidates need p ≥ this·p_max, [0, 1).
  int32_t max_depth = 1;         // Nested forks allowed, [1, 8].
  bool fork_first = true;        // Fork at the first generated position (CoT-decoding).
  float fork_entropy = 64.0f;    // Fork where H > this, bits, [0, 64]; 64 = never (EAGer sets it).
  int32_t max_traces = 16;       // Traces (leaves) per job, [1, 256].
  // EAGer's per-request budget: a fork opens only while the job's tokens so far (committed and
  // explored) are fewer than this; traces already open run to their end. 0: no budget.
  // [0, kMaxTraceTokenBudget].
  int32_t token_budget = 0;
  bool aggregate = true;         // Sum confidences per answer; else the most confident trace wins.
  // PCRE2 regex, at most kMaxAnswerPatternBytes; its last match's group 1 is the answer. Empty:
  // the whole trace is. The caller compiles it (this library has no regex engine).
  std::string answer_pattern;
  // Sampled traces (DeepConf): > 0 samples every step outside a fork at this temperature (with
  // `sampling`'s top_p, top_k and min_p) and draws a fork's distinct candidates the same way,
  // without replacement; 0 keeps traces greedy. [0, 10].
  float temperature = 0.0f;
  // Early stop: the first fork's first `warmup_traces` traces run whole; the others stop once
  // their group confidence over `confidence_window` tokens (trace_confidence.h) falls below the
  // (1 − keep_fraction) quantile of the warm-up traces' lowest. 0: no stop. [0, max_traces].
  int32_t warmup_traces = 0;
  int32_t confidence_window = 16;  // [1, 4096].
  float keep_fraction = 1.0f;      // (0, 1]; GROUP_CONFIDENCE votes keep this share too.
  TraceVote vote = TraceVote::kMargin;
  // The trace committed: 0 the best-ranked, r the one ranked r + 1. [0, max_traces).
  int32_t commit_rank = 0;
};
inline constexpr int kMaxAnswerPatternBytes = 1024;
inline constexpr int32_t kMaxTraceTokenBudget = 1 << 20;

struct PolicyConfig {
  PolicyMode mode = PolicyMode::kSearch;
  SamplingParams sampling;
  Thresholds thresholds;
  Coefficients coefficients;
  BranchOptions branch;
  InsertOptions insert;
  BackspaceOptions backspace;
  AdaptiveOptions adaptive;
  AttentionMode attention_mode = AttentionMode::kExact;
  int32_t reference_len = 4096;  // REFERENCE buffer slots, [1, 1 << 20].
  TraceOptions trace;

  // The fork parameters of the mode: TRACE's own, else BRANCH's.
  int32_t ForkWidth() const { return mode == PolicyMode::kTrace ? trace.width : branch.width; }
  float ForkMinP() const {
    return mode == PolicyMode::kTrace ? trace.candidate_min_p : branch.candidate_min_p;
  }
  int32_t MaxForkDepth() const {
    return mode == PolicyMode::kTrace ? trace.max_depth : branch.max_depth;
  }
  // The rows (a worker batch's sequences, not the decision table's) a job of this policy may
  // run at once: what a tenant's rows= limit counts. The widest the mode may go, times nothing
  // else: SEARCH its branch width (rollout children or beams), TRACE its traces (or its fork
  // width, were that wider), CANONICAL a single path, 1. Nested branches are not multiplied in:
  // the count is a share of the server, not the worst case of one tree.
  int32_t RowsInFlight() const {
    switch (mode) {
      case PolicyMode::kSearch:
        return branch.width;
      case PolicyMode::kTrace:
        return std::max(trace.max_traces, trace.width);
      case PolicyMode::kCanonical:
        break;
    }
    return 1;
  }

  // OK, or InvalidArgument naming the first bad field and its allowed range, e.g.
  // "branch.width: 1 is outside [2, 64]". Insert token ids are only checked for >= 0 here; the
  // caller knows the vocabulary.
  absl::Status Validate() const;
};

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_POLICY_CONFIG_H_
