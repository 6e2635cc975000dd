// DeepConf's confidence of a sampled trace (docs/ARCHITECTURE.md §4.5), shared by the worker,
// which stops a trace whose confidence falls, and the coordinator, which weighs the votes of
// the traces that finished. A token's confidence is the mean negative logprob of the step's
// kConfidenceTopK most likely tokens (high when the distribution is peaked, since the tail then
// holds little mass); a trace's group confidence is the mean token confidence over a sliding
// window of its last tokens.
#ifndef ARBOR_ENTROPIX_TRACE_CONFIDENCE_H_
#define ARBOR_ENTROPIX_TRACE_CONFIDENCE_H_

#include <cstdint>
#include <deque>

#include "absl/types/span.h"

namespace arbor::entropix {

// Candidates a token's confidence averages over (the paper's k).
inline constexpr int kConfidenceTopK = 20;

// −(1/k) Σ_{j<k} top_logprobs[j], k = min(kConfidenceTopK, size); `top_logprobs` sorted, most
// likely first. 0 for an empty span.
float TokenConfidence(absl::Span<const float> top_logprobs);

// The sliding-window mean of token confidences, and the lowest it has been.
class GroupConfidence {
 public:
  explicit GroupConfidence(int32_t window);
  void Add(float token_confidence);
  // The window holds `window` tokens.
  bool full() const { return static_cast<int32_t>(recent_.size()) == window_; }
  // Mean over the tokens in the window (0 when empty).
  double current() const;
  // The lowest current() over every full window so far; before the window first fills, the mean
  // over all tokens (a trace shorter than the window is judged whole).
  double lowest() const;
  // The window's tokens, oldest first.
  const std::deque<float>& recent() const { return recent_; }

 private:
  int32_t window_;
  std::deque<float> recent_;
  double sum_ = 0.0;
  double lowest_full_ = 0.0;
  bool filled_ = false;
};

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_TRACE_CONFIDENCE_H_
