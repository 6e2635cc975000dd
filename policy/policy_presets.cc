#include "policy/policy_presets.h"

#include "absl/strings/str_cat.h"

namespace arbor::policy {

v1::PolicyConfig GreedyPolicy() {
  v1::PolicyConfig p;
  p.set_mode(v1::POLICY_MODE_CANONICAL);
  p.mutable_thresholds()->set_lelv_entropy(64);
  p.mutable_thresholds()->set_lelv_varentropy(4096);
  return p;
}

v1::PolicyConfig PlainSamplingPolicy() {
  v1::PolicyConfig p;
  p.set_mode(v1::POLICY_MODE_CANONICAL);
  v1::Thresholds* t = p.mutable_thresholds();
  t->set_lelv_entropy(0);
  t->set_helv_entropy(64);
  t->set_lehv_varentropy(4096);
  t->set_hehv_varentropy(4096);
  v1::Coefficients* c = p.mutable_coefficients();
  for (auto set :
       {&v1::Coefficients::set_ada_temp_logits, &v1::Coefficients::set_ada_temp_attn,
        &v1::Coefficients::set_ada_temp_agree, &v1::Coefficients::set_ada_top_p_attn_vent,
        &v1::Coefficients::set_ada_top_k_is, &v1::Coefficients::set_ada_top_k_agree,
        &v1::Coefficients::set_ada_min_p_logits}) {
    (c->*set)(0.0f);
  }
  p.mutable_adaptive()->set_n_samples(1);
  v1::SamplingParams* s = p.mutable_sampling();
  s->set_temperature(0.7f);
  s->set_top_p(1.0f);
  s->set_top_k(100);
  s->set_min_p(0.05f);
  return p;
}

namespace {

// A TRACE policy with every fork option set, so that no server default changes what its name
// means.
v1::PolicyConfig TracePolicy(int32_t width, int32_t max_depth, float candidate_min_p,
                             bool fork_first, float fork_entropy, int32_t max_traces) {
  v1::PolicyConfig p;
  p.set_mode(v1::POLICY_MODE_TRACE);
  v1::TraceOptions* t = p.mutable_trace();
  t->set_width(width);
  t->set_max_depth(max_depth);
  t->set_candidate_min_p(candidate_min_p);
  t->set_fork_first(fork_first);
  t->set_fork_entropy(fork_entropy);
  t->set_max_traces(max_traces);
  t->set_token_budget(0);
  t->set_aggregate(true);
  return p;
}

}  // namespace

v1::PolicyConfig CotDecodingPolicy() {
  // 16 traces: room for `arbor eval`'s k= up to 16; the width bounds a single fork anyway.
  return TracePolicy(3, 1, kCotDecodingMinP, /*fork_first=*/true, /*fork_entropy=*/64.0f, 16);
}

v1::PolicyConfig EagerPolicy() {
  return TracePolicy(2, 4, 0.05f, /*fork_first=*/false, kEagerForkEntropy, 6);
}

v1::PolicyConfig DeepConfPolicy() {
  v1::PolicyConfig p = TracePolicy(8, 1, 0.0f, /*fork_first=*/true, /*fork_entropy=*/64.0f, 8);
  v1::TraceOptions* t = p.mutable_trace();
  t->set_temperature(0.2f);
  t->set_warmup_traces(2);
  t->set_confidence_window(16);
  t->set_keep_fraction(0.5f);
  t->set_vote(v1::TRACE_VOTE_GROUP_CONFIDENCE);
  return p;
}

absl::StatusOr<v1::PolicyConfig> NamedPolicy(absl::string_view name) {
  v1::PolicyConfig mode_only;
  if (name == "greedy") return GreedyPolicy();
  if (name == "sample") return PlainSamplingPolicy();
  if (name == "cot_decoding") return CotDecodingPolicy();
  if (name == "eager") return EagerPolicy();
  if (name == "deepconf") return DeepConfPolicy();
  if (name == "search") {
    mode_only.set_mode(v1::POLICY_MODE_SEARCH);
  } else if (name == "canonical") {
    mode_only.set_mode(v1::POLICY_MODE_CANONICAL);
  } else if (name == "trace") {
    mode_only.set_mode(v1::POLICY_MODE_TRACE);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name,
                     "' is not a policy name: greedy, sample, cot_decoding, eager, deepconf, "
                     "search, canonical or trace"));
  }
  return mode_only;
}

}  // namespace arbor::policy
