#include "worker/engine/run_validation.h"

#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace arbor::worker {
namespace {

absl::Status OutOfRange(absl::string_view field, int64_t value, int64_t lo, int64_t hi) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", value, " is outside [", lo, ", ", hi, "]"));
}

absl::Status CheckRange(absl::string_view field, int64_t value, int64_t lo, int64_t hi) {
  return value < lo || value > hi ? OutOfRange(field, value, lo, hi) : absl::OkStatus();
}

absl::Status CheckTokens(const std::string& field,
                         const google::protobuf::RepeatedField<int32_t>& tokens, int32_t vocab) {
  for (int i = 0; i < tokens.size(); ++i) {
    RETURN_IF_ERROR(CheckRange(absl::StrCat(field, "[", i, "]"), tokens[i], 0, vocab - 1));
  }
  return absl::OkStatus();
}

// A confidence is a mean negative logprob: finite and >= 0.
absl::Status CheckConfidence(const std::string& field, float value) {
  if (std::isfinite(value) && value >= 0.0f) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", value, " is not a confidence (finite, >= 0)"));
}

absl::Status ValidateConfidenceStop(const v1::RunItem& item, const std::string& at) {
  RETURN_IF_ERROR(CheckConfidence(at + ".stop_below_confidence", item.stop_below_confidence()));
  if (item.stop_below_confidence() == 0.0f) {
    if (item.recent_confidences_size() > 0) {
      return absl::InvalidArgumentError(
          at + ".recent_confidences: only meaningful with stop_below_confidence");
    }
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(CheckRange(at + ".confidence_window", item.confidence_window(), 1, 4096));
  RETURN_IF_ERROR(CheckRange(at + ".recent_confidences size", item.recent_confidences_size(), 0,
                             item.confidence_window() - 1));
  for (int i = 0; i < item.recent_confidences_size(); ++i) {
    RETURN_IF_ERROR(CheckConfidence(absl::StrCat(at, ".recent_confidences[", i, "]"),
                                    item.recent_confidences(i)));
  }
  return absl::OkStatus();
}

absl::Status ValidateItem(const v1::RunItem& item, const std::string& at, const RunLimits& limits) {
  RETURN_IF_ERROR(CheckTokens(at + ".append", item.append(), limits.vocab_size));
  RETURN_IF_ERROR(CheckRange(at + ".max_steps", item.max_steps(), 0, limits.max_steps));
  RETURN_IF_ERROR(CheckRange(at + ".top_k", item.top_k(), 0, limits.max_top_k));
  RETURN_IF_ERROR(
      CheckTokens(at + ".stop.stop_token_ids", item.stop().stop_token_ids(), limits.vocab_size));
  if (item.append_size() > limits.max_context) {
    return OutOfRange(at + ".append size", item.append_size(), 0, limits.max_context);
  }
  if (item.has_fork_from()) {
    if (item.fork_from() == item.sequence_id()) {
      return absl::InvalidArgumentError(at + ".fork_from: a sequence cannot fork itself");
    }
    if (item.has_truncate_to()) {
      return absl::InvalidArgumentError(
          at + ".truncate_to: not allowed with fork_from (use fork_length)");
    }
    if (item.continues()) {
      return absl::InvalidArgumentError(at + ".continues: not allowed with fork_from");
    }
    if (item.has_fork_length()) {
      RETURN_IF_ERROR(CheckRange(at + ".fork_length", item.fork_length(), 1, limits.max_context));
    }
  } else if (item.has_fork_length()) {
    return absl::InvalidArgumentError(at + ".fork_length: only meaningful with fork_from");
  }
  if (item.has_truncate_to()) {
    RETURN_IF_ERROR(CheckRange(at + ".truncate_to", item.truncate_to(), 1, limits.max_context));
  }
  for (int i = 0; i < item.bans_size(); ++i) {
    const std::string ban = absl::StrCat(at, ".bans[", i, "]");
    RETURN_IF_ERROR(
        CheckRange(ban + ".position", item.bans(i).position(), 0, limits.max_context - 1));
    RETURN_IF_ERROR(
        CheckRange(ban + ".token_id", item.bans(i).token_id(), 0, limits.vocab_size - 1));
  }
  RETURN_IF_ERROR(CheckRange(at + ".inserts_used", item.inserts_used(), 0, 1 << 20));
  RETURN_IF_ERROR(CheckRange(at + ".backspaces_used", item.backspaces_used(), 0, 1 << 20));
  if (item.has_last_insert_position()) {
    RETURN_IF_ERROR(
        CheckRange(at + ".last_insert_position", item.last_insert_position(), 0, 1 << 30));
  }
  RETURN_IF_ERROR(CheckRange(at + ".score_tokens", item.score_tokens(), 0, item.append_size()));
  RETURN_IF_ERROR(CheckRange(at + ".prompt_length", item.prompt_length(), 0, limits.max_context));
  RETURN_IF_ERROR(ValidateConfidenceStop(item, at));
  return CheckRange(at + ".branch_depth", item.branch_depth(), 0, 64);
}

}  // namespace

absl::Status ValidateRunRequest(const v1::RunRequest& request, const RunLimits& limits) {
  RETURN_IF_ERROR(CheckRange("items size", request.items_size(), 1, limits.max_items));
  absl::flat_hash_set<uint64_t> ids;
  for (int i = 0; i < request.items_size(); ++i) {
    const v1::RunItem& item = request.items(i);
    const std::string at = absl::StrCat("items[", i, "]");
    if (!ids.insert(item.sequence_id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ".sequence_id: ", item.sequence_id(), " appears twice in one request"));
    }
    RETURN_IF_ERROR(ValidateItem(item, at, limits));
  }
  return absl::OkStatus();
}

}  // namespace arbor::worker
