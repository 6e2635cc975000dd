#include "entropix/logit_metrics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/bf16.h"
#include "base/status_macros.h"
#include "entropix/top_k.h"

namespace arbor::entropix {
namespace {

// Rows are reduced in chunks small enough to stay in L1 between the max and the sums passes.
constexpr int kChunk = 2048;

absl::Status CheckArguments(int n, int top_k) {
  if (n <= 0) return absl::InvalidArgumentError(absl::StrCat("logits: empty row (n = ", n, ")"));
  if (top_k < 0 || top_k > n) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_k: ", top_k, " is outside [0, ", n, "] (the row width)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<LogitMetrics> FromFloatRow(const float* logits, int n, int top_k) {
  SoftmaxMoments moments;
  for (int start = 0; start < n; start += kChunk) {
    const int len = std::min(kChunk, n - start);
    if (const int64_t bad = FindNonFinite(logits + start, len); bad >= 0) {
      return absl::InvalidArgumentError(absl::StrCat("logits[", start + bad, "] is ",
                                                     logits[start + bad],
                                                     "; logits must be finite "
                                                     "or -inf"));
    }
    moments.AddChunk(logits + start, len);
  }
  ASSIGN_OR_RETURN(LogitMetrics metrics, FinishLogitMetrics(moments));
  metrics.top_k = TopKLogprobs(logits, n, top_k, moments.LogSumExp());
  return metrics;
}

}  // namespace

std::vector<TokenLogprob> TopKLogprobs(const float* logits, int n, int k, double logsumexp) {
  const std::vector<ScoredIndex> best = SelectTopK(logits, n, k);
  std::vector<TokenLogprob> top;
  top.reserve(best.size());
  for (const ScoredIndex& item : best) {
    top.push_back({item.index, static_cast<float>(item.value - logsumexp)});
  }
  return top;
}

absl::StatusOr<LogitMetrics> FinishLogitMetrics(const SoftmaxMoments& moments) {
  if (moments.empty()) {
    return absl::InvalidArgumentError("logits: every entry is -inf (no token is possible)");
  }
  LogitMetrics metrics;
  metrics.entropy = static_cast<float>(moments.EntropyNats() / kLn2);
  metrics.varentropy = static_cast<float>(moments.VarentropyNats() / (kLn2 * kLn2));
  metrics.logsumexp = static_cast<float>(moments.LogSumExp());
  metrics.max_logit = static_cast<float>(moments.max);
  return metrics;
}

absl::StatusOr<LogitMetrics> ComputeLogitMetrics(const float* logits, int n, int top_k) {
  RETURN_IF_ERROR(CheckArguments(n, top_k));
  return FromFloatRow(logits, n, top_k);
}

absl::StatusOr<LogitMetrics> ComputeLogitMetrics(const uint16_t* logits_bf16, int n, int top_k) {
  RETURN_IF_ERROR(CheckArguments(n, top_k));
  // Widening is exact, so the float path is the definition; one temporary row keeps a single
  // implementation of the top-K selection.
  std::vector<float> row(n);
  for (int i = 0; i < n; ++i) row[i] = base::Bf16ToFloat(logits_bf16[i]);
  return FromFloatRow(row.data(), n, top_k);
}

}  // namespace arbor::entropix
