#include "entropix/policy_config.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace arbor::entropix {
namespace {

// Bounds of the coefficients that have no natural range: generous, but finite, so a typo such
// as 1e30 fails loudly instead of producing infinite temperatures.
constexpr double kCoefficientBound = 100.0;
constexpr double kMaxEntropyBits = 64.0;
constexpr double kMaxVarentropyBits = 4096.0;
constexpr int kMaxInsertTokens = 64;

// Integers print as integers ("1048576", not "1.04858e+06").
std::string Number(double v) {
  if (std::isfinite(v) && std::floor(v) == v && std::abs(v) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  return absl::StrCat(v);
}

// Checks lo (<|<=) value (<|<=) hi; the message names the field and the interval.
absl::Status InRange(const std::string& field, double value, double lo, double hi,
                     bool lo_open = false, bool hi_open = false) {
  const bool above = lo_open ? value > lo : value >= lo;
  const bool below = hi_open ? value < hi : value <= hi;
  if (above && below) return absl::OkStatus();  // NaN fails both.
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", Number(value), " is outside ",
                                                 lo_open ? "(" : "[", Number(lo), ", ", Number(hi),
                                                 hi_open ? ")" : "]"));
}

absl::Status Coefficient(const std::string& field, float value) {
  return InRange(field, value, -kCoefficientBound, kCoefficientBound);
}

absl::Status ValidateSampling(const SamplingParams& s) {
  RETURN_IF_ERROR(InRange("sampling.temperature", s.temperature, 0, 10, /*lo_open=*/true));
  RETURN_IF_ERROR(InRange("sampling.top_p", s.top_p, 0, 1, /*lo_open=*/true));
  RETURN_IF_ERROR(InRange("sampling.top_k", s.top_k, 1, 1024));
  return InRange("sampling.min_p", s.min_p, 0, 1, false, /*hi_open=*/true);
}

absl::Status ValidateThresholds(const Thresholds& t) {
  RETURN_IF_ERROR(InRange("thresholds.lelv_entropy", t.lelv_entropy, 0, kMaxEntropyBits));
  RETURN_IF_ERROR(InRange("thresholds.lelv_varentropy", t.lelv_varentropy, 0, kMaxVarentropyBits));
  RETURN_IF_ERROR(InRange("thresholds.helv_entropy", t.helv_entropy, 0, kMaxEntropyBits));
  RETURN_IF_ERROR(InRange("thresholds.helv_varentropy", t.helv_varentropy, 0, kMaxVarentropyBits));
  RETURN_IF_ERROR(InRange("thresholds.lehv_entropy", t.lehv_entropy, 0, kMaxEntropyBits));
  RETURN_IF_ERROR(InRange("thresholds.lehv_varentropy", t.lehv_varentropy, 0, kMaxVarentropyBits));
  RETURN_IF_ERROR(InRange("thresholds.hehv_entropy", t.hehv_entropy, 0, kMaxEntropyBits));
  return InRange("thresholds.hehv_varentropy", t.hehv_varentropy, 0, kMaxVarentropyBits);
}

absl::Status ValidateCoefficients(const Coefficients& c) {
  RETURN_IF_ERROR(Coefficient("coefficients.helv_temp_base", c.helv_temp_base));
  RETURN_IF_ERROR(Coefficient("coefficients.helv_temp_attn", c.helv_temp_attn));
  RETURN_IF_ERROR(InRange("coefficients.helv_temp_cap", c.helv_temp_cap, 0, 10, true));
  RETURN_IF_ERROR(Coefficient("coefficients.lehv_temp_base", c.lehv_temp_base));
  RETURN_IF_ERROR(Coefficient("coefficients.lehv_temp_is", c.lehv_temp_is));
  RETURN_IF_ERROR(InRange("coefficients.lehv_temp_cap", c.lehv_temp_cap, 0, 10, true));
  RETURN_IF_ERROR(Coefficient("coefficients.lehv_top_k_agreement", c.lehv_top_k_agreement));
  RETURN_IF_ERROR(InRange("coefficients.lehv_top_k_min", c.lehv_top_k_min, 1, 1024));
  RETURN_IF_ERROR(Coefficient("coefficients.hehv_temp_base", c.hehv_temp_base));
  RETURN_IF_ERROR(Coefficient("coefficients.hehv_temp_attn_vent", c.hehv_temp_attn_vent));
  RETURN_IF_ERROR(InRange("coefficients.hehv_temp_floor", c.hehv_temp_floor, 0, 10, true));
  RETURN_IF_ERROR(Coefficient("coefficients.hehv_top_p_attn", c.hehv_top_p_attn));
  RETURN_IF_ERROR(InRange("coefficients.hehv_top_p_min", c.hehv_top_p_min, 0, 1, true));
  RETURN_IF_ERROR(Coefficient("coefficients.ada_temp_logits", c.ada_temp_logits));
  RETURN_IF_ERROR(Coefficient("coefficients.ada_temp_attn", c.ada_temp_attn));
  RETURN_IF_ERROR(Coefficient("coefficients.ada_temp_agree", c.ada_temp_agree));
  RETURN_IF_ERROR(Coefficient("coefficients.ada_top_p_attn_vent", c.ada_top_p_attn_vent));
  RETURN_IF_ERROR(Coefficient("coefficients.ada_top_k_is", c.ada_top_k_is));
  RETURN_IF_ERROR(Coefficient("coefficients.ada_top_k_agree", c.ada_top_k_agree));
  return Coefficient("coefficients.ada_min_p_logits", c.ada_min_p_logits);
}

absl::Status ValidateBranch(const BranchOptions& b) {
  RETURN_IF_ERROR(InRange("branch.width", b.width, 2, 64));
  RETURN_IF_ERROR(InRange("branch.max_len", b.max_len, 1, 1024));
  RETURN_IF_ERROR(InRange("branch.calm_entropy", b.calm_entropy, 0, kMaxEntropyBits));
  RETURN_IF_ERROR(InRange("branch.calm_varentropy", b.calm_varentropy, 0, kMaxVarentropyBits));
  RETURN_IF_ERROR(InRange("branch.calm_steps", b.calm_steps, 1, 64));
  RETURN_IF_ERROR(InRange("branch.max_depth", b.max_depth, 1, 8));
  return InRange("branch.candidate_min_p", b.candidate_min_p, 0, 1, false, true);
}

absl::Status ValidateInsert(const InsertOptions& i) {
  RETURN_IF_ERROR(
      InRange("insert.tokens size", static_cast<double>(i.tokens.size()), 0, kMaxInsertTokens));
  for (size_t k = 0; k < i.tokens.size(); ++k) {
    if (i.tokens[k] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("insert.tokens[", k, "]: ", i.tokens[k], " is negative (ids are >= 0)"));
    }
  }
  RETURN_IF_ERROR(InRange("insert.cooldown", i.cooldown, 0, 4096));
  return InRange("insert.max_per_job", i.max_per_job, 0, 1024);
}

absl::Status ValidateAdaptive(const AdaptiveOptions& a) {
  RETURN_IF_ERROR(InRange("adaptive.n_samples", a.n_samples, 1, 64));
  RETURN_IF_ERROR(Coefficient("adaptive.w_entropy", a.w_entropy));
  RETURN_IF_ERROR(Coefficient("adaptive.w_attn_entropy", a.w_attn_entropy));
  RETURN_IF_ERROR(Coefficient("adaptive.w_varentropy", a.w_varentropy));
  RETURN_IF_ERROR(Coefficient("adaptive.w_attn_varentropy", a.w_attn_varentropy));
  RETURN_IF_ERROR(Coefficient("adaptive.w_agreement", a.w_agreement));
  return Coefficient("adaptive.w_interaction", a.w_interaction);
}

absl::Status ValidateTrace(const TraceOptions& t) {
  RETURN_IF_ERROR(InRange("trace.width", t.width, 1, 64));
  RETURN_IF_ERROR(InRange("trace.candidate_min_p", t.candidate_min_p, 0, 1, false, true));
  RETURN_IF_ERROR(InRange("trace.max_depth", t.max_depth, 1, 8));
  RETURN_IF_ERROR(InRange("trace.fork_entropy", t.fork_entropy, 0, kMaxEntropyBits));
  RETURN_IF_ERROR(InRange("trace.max_traces", t.max_traces, 1, 256));
  RETURN_IF_ERROR(InRange("trace.token_budget", t.token_budget, 0, kMaxTraceTokenBudget));
  RETURN_IF_ERROR(InRange("trace.temperature", t.temperature, 0, 10));
  RETURN_IF_ERROR(InRange("trace.warmup_traces", t.warmup_traces, 0, t.max_traces));
  RETURN_IF_ERROR(InRange("trace.confidence_window", t.confidence_window, 1, 4096));
  RETURN_IF_ERROR(InRange("trace.keep_fraction", t.keep_fraction, 0, 1, true, false));
  RETURN_IF_ERROR(InRange("trace.commit_rank", t.commit_rank, 0, t.max_traces - 1));
  return InRange("trace.answer_pattern size", static_cast<double>(t.answer_pattern.size()), 0,
                 kMaxAnswerPatternBytes);
}

}  // namespace

namespace {

// Nested rollouts run their leaves together: up to width^max_depth items in one worker Run,
// which takes at most kMaxRolloutsInFlight. Refused here, naming the fields, rather than failing
// the job once the search is deep in (beam search runs `width` beams; TRACE is bounded by
// trace.max_traces).
absl::Status ValidateNesting(const PolicyConfig& p) {
  if (p.mode == PolicyMode::kTrace || p.branch.mode != BranchMode::kRollout) {
    return absl::OkStatus();
  }
  double leaves = 1;
  for (int32_t d = 0; d < p.branch.max_depth; ++d) leaves *= p.branch.width;
  if (leaves <= kMaxRolloutsInFlight) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "branch.max_depth: width ", p.branch.width, " nested ", p.branch.max_depth, " deep can run ",
      leaves, " rollouts at once; width^max_depth must be <= ", kMaxRolloutsInFlight,
      " (the items a worker runs together)"));
}

}  // namespace

absl::Status PolicyConfig::Validate() const {
  RETURN_IF_ERROR(ValidateSampling(sampling));
  RETURN_IF_ERROR(ValidateThresholds(thresholds));
  RETURN_IF_ERROR(ValidateCoefficients(coefficients));
  RETURN_IF_ERROR(ValidateBranch(branch));
  RETURN_IF_ERROR(ValidateNesting(*this));
  RETURN_IF_ERROR(ValidateInsert(insert));
  RETURN_IF_ERROR(InRange("backspace.max_per_job", backspace.max_per_job, 0, 1024));
  RETURN_IF_ERROR(ValidateAdaptive(adaptive));
  RETURN_IF_ERROR(ValidateTrace(trace));
  return InRange("reference_len", reference_len, 1, 1 << 20);
}

}  // namespace arbor::entropix
