#include "coordinator/job/stored_distribution.h"

#include <algorithm>

namespace arbor::coordinator {

StoredDistribution::StoredDistribution(absl::Span<const TokenAlternative> top_k) {
  ids_.reserve(top_k.size());
  logprobs_.reserve(top_k.size());
  for (const TokenAlternative& alt : top_k) {
    ids_.push_back(alt.token_id);
    logprobs_.push_back(alt.logprob);
  }
}

StoredDistribution::StoredDistribution(const arbor::v1::StepResult& step)
    : StoredDistribution(TopKOf(step)) {}

entropix::SamplingParams SamplingOf(const arbor::v1::StepResult& step) {
  entropix::SamplingParams params;
  params.temperature = step.temperature();
  params.top_p = step.top_p();
  params.top_k = step.top_k_param();
  params.min_p = step.min_p();
  return params;
}

std::vector<TokenAlternative> TopKOf(const arbor::v1::StepResult& step) {
  std::vector<TokenAlternative> top;
  top.reserve(step.top_k_size());
  for (const arbor::v1::TokenLogprob& t : step.top_k()) top.push_back({t.token_id(), t.logprob()});
  return top;
}

Step TreeStep(const arbor::v1::StepResult& s, uint64_t sequence_id) {
  Step step;
  step.token_id = s.token_id();
  step.logprob = std::min(s.logprob(), 0.0f);  // Float rounding may give a hair above 0.
  step.metrics = s.metrics();
  step.strategy = s.strategy();
  step.sequence_id = sequence_id;
  step.top_logprobs = TopKOf(s);
  step.allowed_tokens = s.allowed_tokens();
  return step;
}

}  // namespace arbor::coordinator
