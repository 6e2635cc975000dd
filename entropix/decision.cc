#include "entropix/decision.h"

#include <algorithm>
#include <cmath>

namespace arbor::entropix {
namespace {

// Custom coefficients can drive a temperature to zero or below; the sampler needs T > 0, and
// 0.01 is already indistinguishable from argmax for real logits.
constexpr float kMinTemperature = 0.01f;
// ADAPTIVE clip bounds of the canonical sampler.
constexpr float kAdaptiveTopPMin = 0.1f, kAdaptiveTopPMax = 1.0f;
constexpr float kAdaptiveTopKMin = 1.0f;
constexpr float kAdaptiveMinPMin = 0.01f, kAdaptiveMinPMax = 0.5f;

SamplingParams HelvParams(const Metrics& m, const PolicyConfig& config) {
  const Coefficients& c = config.coefficients;
  SamplingParams s = config.sampling;
  s.temperature = std::min(c.helv_temp_cap,
                           s.temperature * (c.helv_temp_base + c.helv_temp_attn * m.attn_entropy));
  return s;
}

SamplingParams LehvParams(const Metrics& m, const PolicyConfig& config) {
  const Coefficients& c = config.coefficients;
  SamplingParams s = config.sampling;
  s.temperature =
      std::min(c.lehv_temp_cap,
               s.temperature * (c.lehv_temp_base + c.lehv_temp_is * m.interaction_strength));
  // int() of the canonical code truncates toward zero.
  const float scaled = s.top_k * (1.0f + c.lehv_top_k_agreement * (1.0f - m.agreement));
  s.top_k = std::max(c.lehv_top_k_min, static_cast<int32_t>(std::trunc(scaled)));
  return s;
}

SamplingParams HehvParams(const Metrics& m, const PolicyConfig& config) {
  const Coefficients& c = config.coefficients;
  SamplingParams s = config.sampling;
  s.temperature =
      std::max(c.hehv_temp_floor,
               s.temperature * (c.hehv_temp_base + c.hehv_temp_attn_vent * m.attn_varentropy));
  s.top_p = std::max(c.hehv_top_p_min, s.top_p - c.hehv_top_p_attn * m.attn_entropy);
  return s;
}

SamplingParams AdaptiveParams(const Metrics& m, const PolicyConfig& config) {
  const Coefficients& c = config.coefficients;
  SamplingParams s = config.sampling;
  const float logit_uncertainty = m.entropy + m.varentropy;
  const float attn_uncertainty = m.attn_entropy + m.attn_varentropy;
  s.temperature *= 1.0f + c.ada_temp_logits * logit_uncertainty +
                   c.ada_temp_attn * attn_uncertainty - c.ada_temp_agree * m.agreement;
  s.top_p = std::clamp(s.top_p * (1.0f + c.ada_top_p_attn_vent * m.attn_varentropy),
                       kAdaptiveTopPMin, kAdaptiveTopPMax);
  // jnp.round rounds half to even, as nearbyint does in the default rounding mode.
  const float top_k = std::nearbyint(
      s.top_k * (1.0f + c.ada_top_k_is * m.interaction_strength - c.ada_top_k_agree * m.agreement));
  s.top_k = static_cast<int32_t>(
      std::clamp(top_k, kAdaptiveTopKMin, static_cast<float>(kAdaptiveTopKMax)));
  s.min_p = std::clamp(s.min_p * (1.0f - c.ada_min_p_logits * logit_uncertainty), kAdaptiveMinPMin,
                       kAdaptiveMinPMax);
  return s;
}

MatrixRow SelectRow(const Metrics& m, const Thresholds& t) {
  const float h = m.entropy, v = m.varentropy;
  if (h < t.lelv_entropy && v < t.lelv_varentropy) return MatrixRow::kLelv;
  if (h > t.helv_entropy && v < t.helv_varentropy) return MatrixRow::kHelv;
  if (h < t.lehv_entropy && v > t.lehv_varentropy) return MatrixRow::kLehv;
  if (h > t.hehv_entropy && v > t.hehv_varentropy) return MatrixRow::kHehv;
  return MatrixRow::kAdaptive;
}

// Why the row's structural strategy cannot be taken now (kNone: it can).
BlockReason Blocker(MatrixRow row, const PolicyConfig& config, const DecisionContext& ctx) {
  const bool canonical = config.mode == PolicyMode::kCanonical;
  switch (row) {
    case MatrixRow::kHelv:
      if (canonical)
        return ctx.previous_is_insert_token ? BlockReason::kCooldown : BlockReason::kNone;
      if (ctx.inserts_used >= config.insert.max_per_job) return BlockReason::kBudget;
      if (ctx.last_insert_position >= 0 &&
          ctx.position - ctx.last_insert_position <= config.insert.cooldown) {
        return BlockReason::kCooldown;
      }
      return BlockReason::kNone;
    case MatrixRow::kLehv:
      return ctx.branch_depth >= config.MaxForkDepth() ? BlockReason::kDepth : BlockReason::kNone;
    case MatrixRow::kHehv:
      if (ctx.backspaces_used >= config.backspace.max_per_job) return BlockReason::kBudget;
      return ctx.previous_backspaceable ? BlockReason::kNone : BlockReason::kNotBackspaceable;
    default:
      return BlockReason::kNone;
  }
}

// TRACE: greedy, or with trace.temperature one plain draw (reported as the ADAPTIVE row with one
// sample), except at a fork (reported as the LEHV row, the branching one).
Decision DecideTrace(const Metrics& m, const PolicyConfig& config, const DecisionContext& ctx) {
  Decision d;
  d.sampling = config.sampling;
  const bool sampled = config.trace.temperature > 0.0f;
  if (sampled) d.sampling.temperature = config.trace.temperature;
  const bool fork = (config.trace.fork_first && ctx.generated == 0) ||
                    m.entropy > config.trace.fork_entropy;
  if (!fork) {
    d.row = sampled ? MatrixRow::kAdaptive : MatrixRow::kLelv;
    d.strategy = d.fallback = sampled ? Strategy::kAdaptive : Strategy::kArgmax;
    return d;
  }
  d.row = MatrixRow::kLehv;
  if (sampled) d.fallback = Strategy::kAdaptive;
  d.blocked_by = Blocker(MatrixRow::kLehv, config, ctx);
  if (d.blocked_by == BlockReason::kNone) {
    d.strategy = Strategy::kBranch;
  } else {
    d.strategy = d.fallback;
    d.blocked_strategy = Strategy::kBranch;
  }
  return d;
}

}  // namespace

absl::string_view BlockReasonName(BlockReason reason) {
  switch (reason) {
    case BlockReason::kNone:
      return "none";
    case BlockReason::kCooldown:
      return "cooldown";
    case BlockReason::kBudget:
      return "budget";
    case BlockReason::kDepth:
      return "depth";
    case BlockReason::kNotBackspaceable:
      return "not_backspaceable";
  }
  return "unknown";
}

Decision Decide(const Metrics& metrics, const PolicyConfig& config,
                const DecisionContext& context) {
  if (config.mode == PolicyMode::kTrace) return DecideTrace(metrics, config, context);
  Decision d;
  d.row = SelectRow(metrics, config.thresholds);
  Strategy structural = Strategy::kArgmax;
  switch (d.row) {
    case MatrixRow::kLelv:
      d.sampling = config.sampling;
      d.fallback = Strategy::kArgmax;
      break;
    case MatrixRow::kHelv:
      d.sampling = HelvParams(metrics, config);
      d.fallback = Strategy::kHotSample;
      structural = Strategy::kInsert;
      break;
    case MatrixRow::kLehv:
      d.sampling = LehvParams(metrics, config);
      d.fallback = Strategy::kBranchSample;
      if (config.mode == PolicyMode::kSearch) structural = Strategy::kBranch;
      break;
    case MatrixRow::kHehv:
      d.sampling = HehvParams(metrics, config);
      d.fallback = Strategy::kResample;
      if (config.mode == PolicyMode::kSearch) structural = Strategy::kBackspace;
      break;
    case MatrixRow::kAdaptive:
      d.sampling = AdaptiveParams(metrics, config);
      d.fallback = Strategy::kAdaptive;
      d.n_samples = config.adaptive.n_samples;
      break;
  }
  d.sampling.temperature = std::max(kMinTemperature, d.sampling.temperature);
  d.strategy = d.fallback;
  if (IsStructural(structural)) {
    d.blocked_by = Blocker(d.row, config, context);
    if (d.blocked_by == BlockReason::kNone) {
      d.strategy = structural;
      if (structural == Strategy::kInsert) d.insert_tokens = config.insert.tokens;
    } else {
      d.blocked_strategy = structural;
    }
  }
  return d;
}

double ConfidenceTerm(const Metrics& m, const AdaptiveOptions& w) {
  return w.w_entropy * (1.0 - m.entropy) + w.w_attn_entropy * (1.0 - m.attn_entropy) +
         w.w_varentropy * (1.0 - m.varentropy) + w.w_attn_varentropy * (1.0 - m.attn_varentropy) +
         w.w_agreement * m.agreement + w.w_interaction * m.interaction_strength;
}

}  // namespace arbor::entropix
