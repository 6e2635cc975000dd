#include "entropix/trace_confidence.h"

#include <algorithm>

namespace arbor::entropix {

float TokenConfidence(absl::Span<const float> top_logprobs) {
  const size_t k = std::min<size_t>(kConfidenceTopK, top_logprobs.size());
  if (k == 0) return 0.0f;
  double sum = 0.0;
  for (size_t j = 0; j < k; ++j) sum -= top_logprobs[j];
  return static_cast<float>(sum / static_cast<double>(k));
}

GroupConfidence::GroupConfidence(int32_t window) : window_(std::max(window, 1)) {}

void GroupConfidence::Add(float token_confidence) {
  recent_.push_back(token_confidence);
  sum_ += token_confidence;
  if (static_cast<int32_t>(recent_.size()) > window_) {
    sum_ -= recent_.front();
    recent_.pop_front();
  }
  if (full()) {
    lowest_full_ = filled_ ? std::min(lowest_full_, current()) : current();
    filled_ = true;
  }
}

double GroupConfidence::current() const {
  return recent_.empty() ? 0.0 : sum_ / static_cast<double>(recent_.size());
}

double GroupConfidence::lowest() const { return filled_ ? lowest_full_ : current(); }

}  // namespace arbor::entropix
