#include "entropix/logit_processors.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

namespace arbor::entropix {
namespace {

absl::Status OutOfRange(absl::string_view prefix, absl::string_view field,
                        absl::string_view range) {
  return absl::InvalidArgumentError(absl::StrCat(prefix, field, ": must be in ", range));
}

}  // namespace

bool LogitProcessorConfig::active() const {
  return repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f ||
         !logit_bias.empty();
}

absl::Status LogitProcessorConfig::Validate(int32_t vocab, absl::string_view prefix) const {
  // Negated comparisons, so NaN is refused too.
  if (!(repetition_penalty > 0.0f && repetition_penalty <= 2.0f)) {
    return OutOfRange(prefix, "repetition_penalty", "(0, 2]");
  }
  if (!(std::abs(frequency_penalty) <= 2.0f)) {
    return OutOfRange(prefix, "frequency_penalty", "[-2, 2]");
  }
  if (!(std::abs(presence_penalty) <= 2.0f)) {
    return OutOfRange(prefix, "presence_penalty", "[-2, 2]");
  }
  if (logit_bias.size() > static_cast<size_t>(kMaxLogitBias)) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "logit_bias: at most ", kMaxLogitBias, " entries"));
  }
  for (const auto& [token, bias] : logit_bias) {
    const std::string field = absl::StrCat("logit_bias[", token, "]");
    if (token < 0 || token >= vocab) {
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, field, ": token id must be in [0, ", vocab, ")"));
    }
    if (!(std::abs(bias) <= 100.0f)) return OutOfRange(prefix, field, "[-100, 100]");
  }
  return absl::OkStatus();
}

void ApplyLogitAdjustments(absl::Span<const LogitAdjustment> adjustments,
                           absl::Span<float> logits) {
  constexpr float kMax = std::numeric_limits<float>::max();
  for (const LogitAdjustment& a : adjustments) {
    float& x = logits[a.token];
    if (std::isinf(x)) continue;  // −inf: impossible whatever is added (+inf is refused later).
    const float scaled = x > 0.0f ? x / std::max(a.divide, kMinRepetitionDivisor) : x * a.divide;
    x = std::clamp(scaled + a.add, -kMax, kMax);
  }
}

LogitProcessorState::LogitProcessorState(LogitProcessorConfig config)
    : config_(std::move(config)) {}

void LogitProcessorState::Add(int32_t token, int32_t position) {
  if (!config_.active()) return;
  in_context_.insert(token);
  if (position >= config_.output_start) ++output_count_[token];
  stale_ = true;
}

absl::Span<const LogitAdjustment> LogitProcessorState::Adjustments() {
  if (!stale_) return adjustments_;
  stale_ = false;
  adjustments_.clear();
  if (!config_.active()) return adjustments_;
  // Every token some processor touches, once, in token order.
  std::vector<int32_t> tokens;
  if (config_.repetition_penalty != 1.0f) {
    tokens.insert(tokens.end(), in_context_.begin(), in_context_.end());
  }
  if (config_.frequency_penalty != 0.0f || config_.presence_penalty != 0.0f) {
    for (const auto& [token, count] : output_count_) tokens.push_back(token);
  }
  for (const auto& [token, bias] : config_.logit_bias) tokens.push_back(token);
  std::sort(tokens.begin(), tokens.end());
  tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
  for (int32_t token : tokens) {
    LogitAdjustment a{token, 1.0f, 0.0f};
    if (in_context_.contains(token)) a.divide = config_.repetition_penalty;
    if (const auto it = output_count_.find(token); it != output_count_.end()) {
      a.add -=
          config_.frequency_penalty * static_cast<float>(it->second) + config_.presence_penalty;
    }
    const auto bias = std::lower_bound(config_.logit_bias.begin(), config_.logit_bias.end(),
                                       std::make_pair(token, -INFINITY));
    if (bias != config_.logit_bias.end() && bias->first == token) a.add += bias->second;
    adjustments_.push_back(a);
  }
  return adjustments_;
}

}  // namespace arbor::entropix
