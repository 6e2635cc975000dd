#include "policy/policy_convert.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "policy/policy_enums.h"

namespace arbor::policy {
namespace {

// Copies a proto optional field over the default when it is set.
#define ARBOR_APPLY(msg, out, field) \
  if ((msg).has_##field()) (out).field = (msg).field()

// Sets `out` from a proto enum field that is present; UNSPECIFIED (0) keeps the default.
template <typename Table>
absl::Status ApplyEnum(const Table& table, bool present, typename Table::ProtoType value,
                       absl::string_view field, typename Table::ConfigType& out) {
  if (!present || static_cast<int>(value) == 0) return absl::OkStatus();
  const std::optional<typename Table::ConfigType> config = table.FromProto(value);
  if (!config.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": unknown enum value ", static_cast<int>(value)));
  }
  out = *config;
  return absl::OkStatus();
}

absl::Status ApplyEnums(const v1::PolicyConfig& p, entropix::PolicyConfig& c) {
  RETURN_IF_ERROR(ApplyEnum(kPolicyModes, p.has_mode(), p.mode(), "mode", c.mode));
  RETURN_IF_ERROR(ApplyEnum(kBranchModes, p.branch().has_mode(), p.branch().mode(), "branch.mode",
                            c.branch.mode));
  RETURN_IF_ERROR(
      ApplyEnum(kTraceVotes, p.trace().has_vote(), p.trace().vote(), "trace.vote", c.trace.vote));
  return ApplyEnum(kAttentionModes, p.has_attention_mode(), p.attention_mode(), "attention_mode",
                   c.attention_mode);
}

}  // namespace

absl::StatusOr<entropix::PolicyConfig> PolicyFromProto(const v1::PolicyConfig& p,
                                                       const entropix::PolicyConfig& defaults) {
  entropix::PolicyConfig c = defaults;
  RETURN_IF_ERROR(ApplyEnums(p, c));
  const v1::SamplingParams& s = p.sampling();
  ARBOR_APPLY(s, c.sampling, temperature);
  ARBOR_APPLY(s, c.sampling, top_p);
  ARBOR_APPLY(s, c.sampling, top_k);
  ARBOR_APPLY(s, c.sampling, min_p);
  const v1::Thresholds& t = p.thresholds();
  ARBOR_APPLY(t, c.thresholds, lelv_entropy);
  ARBOR_APPLY(t, c.thresholds, lelv_varentropy);
  ARBOR_APPLY(t, c.thresholds, helv_entropy);
  ARBOR_APPLY(t, c.thresholds, helv_varentropy);
  ARBOR_APPLY(t, c.thresholds, lehv_entropy);
  ARBOR_APPLY(t, c.thresholds, lehv_varentropy);
  ARBOR_APPLY(t, c.thresholds, hehv_entropy);
  ARBOR_APPLY(t, c.thresholds, hehv_varentropy);
  const v1::Coefficients& k = p.coefficients();
  ARBOR_APPLY(k, c.coefficients, helv_temp_base);
  ARBOR_APPLY(k, c.coefficients, helv_temp_attn);
  ARBOR_APPLY(k, c.coefficients, helv_temp_cap);
  ARBOR_APPLY(k, c.coefficients, lehv_temp_base);
  ARBOR_APPLY(k, c.coefficients, lehv_temp_is);
  ARBOR_APPLY(k, c.coefficients, lehv_temp_cap);
  ARBOR_APPLY(k, c.coefficients, lehv_top_k_agreement);
  ARBOR_APPLY(k, c.coefficients, lehv_top_k_min);
  ARBOR_APPLY(k, c.coefficients, hehv_temp_base);
  ARBOR_APPLY(k, c.coefficients, hehv_temp_attn_vent);
  ARBOR_APPLY(k, c.coefficients, hehv_temp_floor);
  ARBOR_APPLY(k, c.coefficients, hehv_top_p_attn);
  ARBOR_APPLY(k, c.coefficients, hehv_top_p_min);
  ARBOR_APPLY(k, c.coefficients, ada_temp_logits);
  ARBOR_APPLY(k, c.coefficients, ada_temp_attn);
  ARBOR_APPLY(k, c.coefficients, ada_temp_agree);
  ARBOR_APPLY(k, c.coefficients, ada_top_p_attn_vent);
  ARBOR_APPLY(k, c.coefficients, ada_top_k_is);
  ARBOR_APPLY(k, c.coefficients, ada_top_k_agree);
  ARBOR_APPLY(k, c.coefficients, ada_min_p_logits);
  const v1::BranchOptions& b = p.branch();
  ARBOR_APPLY(b, c.branch, width);
  ARBOR_APPLY(b, c.branch, max_len);
  ARBOR_APPLY(b, c.branch, calm_entropy);
  ARBOR_APPLY(b, c.branch, calm_varentropy);
  ARBOR_APPLY(b, c.branch, calm_steps);
  ARBOR_APPLY(b, c.branch, max_depth);
  ARBOR_APPLY(b, c.branch, candidate_min_p);
  if (p.insert().tokens_size() > 0) {
    c.insert.tokens.assign(p.insert().tokens().begin(), p.insert().tokens().end());
  }
  ARBOR_APPLY(p.insert(), c.insert, cooldown);
  ARBOR_APPLY(p.insert(), c.insert, max_per_job);
  ARBOR_APPLY(p.backspace(), c.backspace, max_per_job);
  const v1::AdaptiveOptions& a = p.adaptive();
  ARBOR_APPLY(a, c.adaptive, n_samples);
  ARBOR_APPLY(a, c.adaptive, w_entropy);
  ARBOR_APPLY(a, c.adaptive, w_attn_entropy);
  ARBOR_APPLY(a, c.adaptive, w_varentropy);
  ARBOR_APPLY(a, c.adaptive, w_attn_varentropy);
  ARBOR_APPLY(a, c.adaptive, w_agreement);
  ARBOR_APPLY(a, c.adaptive, w_interaction);
  ARBOR_APPLY(p, c, reference_len);
  const v1::TraceOptions& r = p.trace();
  ARBOR_APPLY(r, c.trace, width);
  ARBOR_APPLY(r, c.trace, candidate_min_p);
  ARBOR_APPLY(r, c.trace, max_depth);
  ARBOR_APPLY(r, c.trace, fork_first);
  ARBOR_APPLY(r, c.trace, fork_entropy);
  ARBOR_APPLY(r, c.trace, max_traces);
  ARBOR_APPLY(r, c.trace, token_budget);
  ARBOR_APPLY(r, c.trace, aggregate);
  ARBOR_APPLY(r, c.trace, answer_pattern);
  ARBOR_APPLY(r, c.trace, temperature);
  ARBOR_APPLY(r, c.trace, warmup_traces);
  ARBOR_APPLY(r, c.trace, confidence_window);
  ARBOR_APPLY(r, c.trace, keep_fraction);
  ARBOR_APPLY(r, c.trace, commit_rank);
  RETURN_IF_ERROR(c.Validate());
  return c;
}

#undef ARBOR_APPLY

namespace {

void CoefficientsToProto(const entropix::Coefficients& e, v1::Coefficients* k) {
  k->set_helv_temp_base(e.helv_temp_base);
  k->set_helv_temp_attn(e.helv_temp_attn);
  k->set_helv_temp_cap(e.helv_temp_cap);
  k->set_lehv_temp_base(e.lehv_temp_base);
  k->set_lehv_temp_is(e.lehv_temp_is);
  k->set_lehv_temp_cap(e.lehv_temp_cap);
  k->set_lehv_top_k_agreement(e.lehv_top_k_agreement);
  k->set_lehv_top_k_min(e.lehv_top_k_min);
  k->set_hehv_temp_base(e.hehv_temp_base);
  k->set_hehv_temp_attn_vent(e.hehv_temp_attn_vent);
  k->set_hehv_temp_floor(e.hehv_temp_floor);
  k->set_hehv_top_p_attn(e.hehv_top_p_attn);
  k->set_hehv_top_p_min(e.hehv_top_p_min);
  k->set_ada_temp_logits(e.ada_temp_logits);
  k->set_ada_temp_attn(e.ada_temp_attn);
  k->set_ada_temp_agree(e.ada_temp_agree);
  k->set_ada_top_p_attn_vent(e.ada_top_p_attn_vent);
  k->set_ada_top_k_is(e.ada_top_k_is);
  k->set_ada_top_k_agree(e.ada_top_k_agree);
  k->set_ada_min_p_logits(e.ada_min_p_logits);
}

void BranchToProto(const entropix::BranchOptions& o, v1::BranchOptions* b) {
  b->set_width(o.width);
  b->set_mode(kBranchModes.ToProto(o.mode));
  b->set_max_len(o.max_len);
  b->set_calm_entropy(o.calm_entropy);
  b->set_calm_varentropy(o.calm_varentropy);
  b->set_calm_steps(o.calm_steps);
  b->set_max_depth(o.max_depth);
  b->set_candidate_min_p(o.candidate_min_p);
}

void TraceToProto(const entropix::TraceOptions& o, v1::TraceOptions* r) {
  r->set_width(o.width);
  r->set_candidate_min_p(o.candidate_min_p);
  r->set_max_depth(o.max_depth);
  r->set_fork_first(o.fork_first);
  r->set_fork_entropy(o.fork_entropy);
  r->set_max_traces(o.max_traces);
  r->set_token_budget(o.token_budget);
  r->set_aggregate(o.aggregate);
  r->set_answer_pattern(o.answer_pattern);
  r->set_temperature(o.temperature);
  r->set_warmup_traces(o.warmup_traces);
  r->set_confidence_window(o.confidence_window);
  r->set_keep_fraction(o.keep_fraction);
  r->set_vote(kTraceVotes.ToProto(o.vote));
  r->set_commit_rank(o.commit_rank);
}

}  // namespace

absl::StatusOr<v1::PolicyConfig> ChangedPolicy(const entropix::PolicyConfig& ran,
                                               const v1::PolicyConfig& change) {
  absl::StatusOr<entropix::PolicyConfig> changed = PolicyFromProto(change, ran);
  if (!changed.ok()) {
    return absl::Status(changed.status().code(),
                        absl::StrCat("policy.", changed.status().message()));
  }
  return PolicyToProto(*changed);
}

v1::PolicyConfig PolicyToProto(const entropix::PolicyConfig& c) {
  v1::PolicyConfig p;
  p.set_mode(kPolicyModes.ToProto(c.mode));
  v1::SamplingParams* s = p.mutable_sampling();
  s->set_temperature(c.sampling.temperature);
  s->set_top_p(c.sampling.top_p);
  s->set_top_k(c.sampling.top_k);
  s->set_min_p(c.sampling.min_p);
  v1::Thresholds* t = p.mutable_thresholds();
  t->set_lelv_entropy(c.thresholds.lelv_entropy);
  t->set_lelv_varentropy(c.thresholds.lelv_varentropy);
  t->set_helv_entropy(c.thresholds.helv_entropy);
  t->set_helv_varentropy(c.thresholds.helv_varentropy);
  t->set_lehv_entropy(c.thresholds.lehv_entropy);
  t->set_lehv_varentropy(c.thresholds.lehv_varentropy);
  t->set_hehv_entropy(c.thresholds.hehv_entropy);
  t->set_hehv_varentropy(c.thresholds.hehv_varentropy);
  CoefficientsToProto(c.coefficients, p.mutable_coefficients());
  BranchToProto(c.branch, p.mutable_branch());
  v1::InsertOptions* i = p.mutable_insert();
  for (int32_t token : c.insert.tokens) i->add_tokens(token);
  i->set_cooldown(c.insert.cooldown);
  i->set_max_per_job(c.insert.max_per_job);
  p.mutable_backspace()->set_max_per_job(c.backspace.max_per_job);
  v1::AdaptiveOptions* a = p.mutable_adaptive();
  a->set_n_samples(c.adaptive.n_samples);
  a->set_w_entropy(c.adaptive.w_entropy);
  a->set_w_attn_entropy(c.adaptive.w_attn_entropy);
  a->set_w_varentropy(c.adaptive.w_varentropy);
  a->set_w_attn_varentropy(c.adaptive.w_attn_varentropy);
  a->set_w_agreement(c.adaptive.w_agreement);
  a->set_w_interaction(c.adaptive.w_interaction);
  p.set_attention_mode(kAttentionModes.ToProto(c.attention_mode));
  p.set_reference_len(c.reference_len);
  TraceToProto(c.trace, p.mutable_trace());
  return p;
}

v1::Metrics MetricsToProto(const entropix::Metrics& m) {
  v1::Metrics p;
  p.set_entropy(m.entropy);
  p.set_varentropy(m.varentropy);
  p.set_attn_entropy(m.attn_entropy);
  p.set_attn_varentropy(m.attn_varentropy);
  p.set_attn_head_varentropy(m.attn_head_varentropy);
  p.set_agreement(m.agreement);
  p.set_interaction_strength(m.interaction_strength);
  p.set_logsumexp(m.logsumexp);
  return p;
}

entropix::Metrics MetricsFromProto(const v1::Metrics& p) {
  entropix::Metrics m;
  m.entropy = p.entropy();
  m.varentropy = p.varentropy();
  m.attn_entropy = p.attn_entropy();
  m.attn_varentropy = p.attn_varentropy();
  m.attn_head_varentropy = p.attn_head_varentropy();
  m.agreement = p.agreement();
  m.interaction_strength = p.interaction_strength();
  m.logsumexp = p.logsumexp();
  return m;
}

v1::Strategy StrategyToProto(entropix::Strategy strategy) { return kStrategies.ToProto(strategy); }

absl::StatusOr<entropix::Strategy> StrategyFromProto(v1::Strategy strategy) {
  const std::optional<entropix::Strategy> config = kStrategies.FromProto(strategy);
  if (!config.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("strategy: ", static_cast<int>(strategy), " is not a known strategy"));
  }
  return *config;
}

absl::StatusOr<entropix::LogitProcessorConfig> LogitProcessorsFromProto(
    const v1::LogitProcessors& proto, int32_t vocab, int32_t prompt_length,
    absl::string_view prefix) {
  entropix::LogitProcessorConfig config;
  if (proto.has_repetition_penalty()) config.repetition_penalty = proto.repetition_penalty();
  if (proto.has_frequency_penalty()) config.frequency_penalty = proto.frequency_penalty();
  if (proto.has_presence_penalty()) config.presence_penalty = proto.presence_penalty();
  config.logit_bias.assign(proto.logit_bias().begin(), proto.logit_bias().end());
  std::sort(config.logit_bias.begin(), config.logit_bias.end());  // Map order is unspecified.
  config.output_start = prompt_length;
  RETURN_IF_ERROR(config.Validate(vocab, prefix));
  return config;
}

}  // namespace arbor::policy
