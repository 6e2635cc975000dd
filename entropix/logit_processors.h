// Logit processors: the adjustments OpenAI-style clients ask of a step's logits — a repetition
// penalty over the context, frequency and presence penalties over the output, and a per-token
// bias — applied before the entropix metrics, the policy and the sampler see the distribution,
// so a search reads the same adjusted distribution it samples from (docs/API.md, "Logit
// processors"). They touch only the tokens they name: a step's adjustments are a short list
// sorted by token id, applied in that one order, so the result does not depend on how a
// sequence's tokens were counted.
//
// For a logit x of token t:
//   x → x / r when x > 0, else x · r           (t anywhere in the context; r = repetition)
//   x → x − f · count(t) − p · [count(t) > 0]  (count over the output; f, p = frequency, presence)
//   x → x + bias(t)                            (logit_bias)
// Every in-range setting keeps a finite logit finite. A positive logit is divided by
// max(r, kMinRepetitionDivisor): 10⁻⁶ already multiplies it a million-fold (a logit of 1 becomes
// 10⁶, beyond any logit a model produces, so the sampled distribution is what any smaller r
// gives), where r = 10⁻³⁸ would overflow every logit above 3.4 to +inf. A floor rather than a
// ceiling on the result keeps the boosted tokens in their order (a ceiling would tie them) and
// keeps later arithmetic on the logits (squares for the varentropy, division by the temperature)
// far from float's limits. A result still beyond float's range (from a logit near FLT_MAX)
// saturates at ±FLT_MAX; a −inf logit (an impossible token) stays −inf.
#ifndef ARBOR_ENTROPIX_LOGIT_PROCESSORS_H_
#define ARBOR_ENTROPIX_LOGIT_PROCESSORS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace arbor::entropix {

struct LogitProcessorConfig {
  float repetition_penalty = 1.0f;  // (0, 2]; 1: off.
  float frequency_penalty = 0.0f;   // [−2, 2]
  float presence_penalty = 0.0f;    // [−2, 2]
  // (token, bias in [−100, 100]) sorted by token, distinct; at most kMaxLogitBias entries.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // Positions from here on are the output (the job's prompt length): what frequency and presence
  // count.
  int32_t output_start = 0;

  bool active() const;
  // INVALID_ARGUMENT naming the field (under `prefix`, e.g. "processors.") when a value is out of
  // its range or a biased token is not in [0, vocab).
  absl::Status Validate(int32_t vocab, absl::string_view prefix) const;
};

inline constexpr int32_t kMaxLogitBias = 300;  // As OpenAI's API.
// The smallest divisor a positive logit sees (see the top of this file).
inline constexpr float kMinRepetitionDivisor = 1e-6f;

// One token's change: x → (x > 0 ? x / max(divide, kMinRepetitionDivisor) : x · divide) + add,
// within ±FLT_MAX.
struct LogitAdjustment {
  int32_t token = 0;
  float divide = 1.0f;
  float add = 0.0f;
};

// Applies `adjustments` (tokens in [0, logits.size())) to `logits` in place, in list order;
// finite logits stay finite, −inf stays −inf.
void ApplyLogitAdjustments(absl::Span<const LogitAdjustment> adjustments, absl::Span<float> logits);

// A sequence's processors: fed every token as the sequence grows, yields the next step's
// adjustments.
class LogitProcessorState {
 public:
  explicit LogitProcessorState(LogitProcessorConfig config);

  const LogitProcessorConfig& config() const { return config_; }
  // The token at `position` joins the sequence (positions in increasing order).
  void Add(int32_t token, int32_t position);
  // The adjustments for the next step, sorted by token; empty when no processor is active.
  absl::Span<const LogitAdjustment> Adjustments();

 private:
  LogitProcessorConfig config_;
  absl::flat_hash_map<int32_t, int32_t> output_count_;  // Output tokens' counts.
  absl::flat_hash_set<int32_t> in_context_;             // Tokens anywhere in the sequence.
  std::vector<LogitAdjustment> adjustments_;
  bool stale_ = true;
};

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_LOGIT_PROCESSORS_H_
