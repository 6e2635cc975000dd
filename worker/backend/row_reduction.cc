#include "worker/backend/row_reduction.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"

namespace arbor::worker {
namespace {

void MaskLogits(absl::Span<const uint64_t> allowed, absl::Span<float> logits) {
  constexpr float kNever = -std::numeric_limits<float>::infinity();
  for (size_t word = 0; word * 64 < logits.size(); ++word) {
    const uint64_t bits = allowed[word];
    if (bits == ~uint64_t{0}) continue;
    const size_t end = std::min(logits.size(), word * 64 + 64);
    for (size_t i = word * 64; i < end; ++i) {
      if (((bits >> (i & 63)) & 1) == 0) logits[i] = kNever;
    }
  }
}

}  // namespace

absl::Status ValidateReductionRequest(const ReductionRequest& request, int32_t vocab) {
  if (request.candidates < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("reduction.candidates: ", request.candidates, " is negative"));
  }
  if (request.probe_token < -1 || request.probe_token >= vocab) {
    return absl::InvalidArgumentError(absl::StrCat("reduction.probe_token: ", request.probe_token,
                                                   " is outside [0, ", vocab, ") and not -1"));
  }
  if (request.reference_len < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("reduction.reference_len: ", request.reference_len, " is below 1"));
  }
  if (!request.allowed.empty() && request.allowed.size() * 64 < static_cast<size_t>(vocab)) {
    return absl::InvalidArgumentError(absl::StrCat("reduction.allowed: ", request.allowed.size(),
                                                   " words do not cover ", vocab, " tokens"));
  }
  for (const entropix::LogitAdjustment& a : request.adjustments) {
    if (a.token < 0 || a.token >= vocab) {
      return absl::InvalidArgumentError(
          absl::StrCat("reduction.adjustments: token ", a.token, " is outside [0, ", vocab, ")"));
    }
  }
  return absl::OkStatus();
}

void ReduceRowOnHost(absl::Span<const float> logits, const float* scores, int num_heads, int keys,
                     RowReduction& out, const entropix::RowSplit& split) {
  const ReductionRequest& request = out.request;
  const int vocab = static_cast<int>(logits.size());
  std::vector<float> adjusted;  // Only rows with processors or a constraint pay for a copy.
  if (!request.adjustments.empty() || !request.allowed.empty()) {
    adjusted.assign(logits.begin(), logits.end());
    entropix::ApplyLogitAdjustments(request.adjustments, absl::MakeSpan(adjusted));
    if (!request.allowed.empty()) MaskLogits(request.allowed, absl::MakeSpan(adjusted));
    logits = adjusted;
  }
  absl::StatusOr<entropix::LogitSummary> summary = entropix::SummarizeLogits(
      logits.data(), vocab, std::min(request.candidates, vocab), request.probe_token, split);
  if (!summary.ok()) {
    out.status = summary.status();
    return;
  }
  absl::StatusOr<entropix::AttentionMetrics> attention = entropix::ComputeAttentionMetrics(
      scores, num_heads, keys, keys, request.attention_mode, request.reference_len);
  if (!attention.ok()) {
    out.status = attention.status();
    return;
  }
  out.status = absl::OkStatus();
  out.logits = summary->metrics;
  out.attention = *attention;
  if (!request.allowed.empty()) {  // Disallowed tokens are no candidates, whatever k asked.
    while (!summary->best.empty() && std::isinf(summary->best.back().value)) {
      summary->best.pop_back();
    }
  }
  out.candidates = entropix::CandidateRow::Of(summary->best);
  out.probe_logit = summary->probe_logit;
  out.probe_rank = summary->probe_rank;
}

entropix::RowSplit RowSplitOn(kernels::ThreadPool& pool) {
  return {.parts = pool.num_threads(),
          .run = [&pool](int parts, const std::function<void(int)>& part) {
            pool.ParallelFor(parts, 1, [&](int64_t begin, int64_t end) {
              for (int64_t p = begin; p < end; ++p) part(static_cast<int>(p));
            });
          }};
}

}  // namespace arbor::worker
