#include "entropix/logit_metrics.h"

#include <algorithm>
#include <optional>

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

// Offers x[0..len) (row indices begin..) to `stream`, skipping whole blocks below its bar: once the
// stream is full almost every block of a row loses to the bar, and one vectorised max decides it.
void OfferChunk(const float* x, int begin, int len, TopKStream& stream) {
  constexpr int kBlock = 64;
  for (int start = 0; start < len; start += kBlock) {
    const int n = std::min(kBlock, len - start);
    if (base::MaxOf(x + start, n) < stream.bar()) continue;
    for (int i = start; i < start + n; ++i) stream.Offer(x[i], begin + i);
  }
}

int32_t CountAbove(const float* x, int n, float value) {
  int32_t above = 0;
  for (int i = 0; i < n; ++i) above += x[i] > value;
  return above;
}

std::vector<TokenLogprob> ToLogprobs(const std::vector<ScoredIndex>& best, double logsumexp) {
  std::vector<TokenLogprob> top;
  top.reserve(best.size());
  for (const ScoredIndex& item : best) {
    top.push_back({item.index, static_cast<float>(item.value - logsumexp)});
  }
  return top;
}

// What one part of a row (chunks [begin, end)) yields: each chunk's moments in order, its own
// top-K stream, the entries above the probe, and its first non-finite entry (then the rest of the
// part is skipped).
struct PartSummary {
  std::vector<base::SoftmaxMoments> chunks;
  std::optional<TopKStream> stream;
  int32_t above = 0;
  int64_t bad = -1;
};

void SummarizePart(const float* logits, int n, int begin, int end, int k, int probe,
                   PartSummary& part) {
  if (k > 0) part.stream.emplace(k);
  part.chunks.reserve(end - begin);
  for (int c = begin; c < end; ++c) {
    const int start = c * kChunk, len = std::min(kChunk, n - start);
    if (const int64_t bad = base::FindNonFinite(logits + start, len); bad >= 0) {
      part.bad = start + bad;
      return;
    }
    part.chunks.push_back(base::SoftmaxMoments::OfChunk(logits + start, len));
    if (k > 0) OfferChunk(logits + start, start, len, *part.stream);
    if (probe >= 0) part.above += CountAbove(logits + start, len, logits[probe]);
  }
}

// The parts joined in their order: the chunks' moments merged as one pass over the row would
// merge them, the streams' items ranked again (one order over all items, so which part kept an
// item does not matter), the counts added.
absl::StatusOr<LogitSummary> JoinParts(const float* logits, int n, int k, int probe,
                                       bool stream_top_k, std::vector<PartSummary>& parts) {
  base::SoftmaxMoments moments;
  LogitSummary summary;
  for (PartSummary& part : parts) {
    if (part.bad >= 0) {
      return absl::InvalidArgumentError(absl::StrCat("logits[", part.bad, "] is ", logits[part.bad],
                                                     "; logits must be finite or -inf"));
    }
    for (const base::SoftmaxMoments& chunk : part.chunks) moments.Merge(chunk);
    if (part.stream) {
      std::vector<ScoredIndex> kept = std::move(*part.stream).TakeSorted();
      summary.best.insert(summary.best.end(), kept.begin(), kept.end());
    }
    summary.probe_rank += part.above;
  }
  ASSIGN_OR_RETURN(summary.metrics, FinishLogitMetrics(moments));
  summary.logsumexp = moments.LogSumExp();
  if (probe >= 0) {
    summary.probe_logit = logits[probe];
    summary.probe_rank += 1;
  }
  if (stream_top_k) {
    if (parts.size() > 1) KeepTopK(summary.best, k);  // One part's stream is ranked already.
  } else {
    summary.best = SelectTopK(logits, n, k);
  }
  return summary;
}

absl::StatusOr<LogitSummary> FromFloatRow(const float* logits, int n, int k, int probe,
                                          const RowSplit& split) {
  // Small k against the row streams through a bounded heap chunk by chunk; a large one is a
  // partial selection over the whole row afterwards (SelectTopK's own split).
  const bool stream_top_k = k > 0 && int64_t{k} * 8 < n;
  const int chunks = (n + kChunk - 1) / kChunk;
  const int count = std::clamp(split.parts, 1, chunks);
  std::vector<PartSummary> parts(count);
  auto run_part = [&](int p) {
    SummarizePart(logits, n, p * chunks / count, (p + 1) * chunks / count, stream_top_k ? k : 0,
                  probe, parts[p]);
  };
  if (count == 1 || !split.run) {
    for (int p = 0; p < count; ++p) run_part(p);
  } else {
    split.run(count, run_part);
  }
  return JoinParts(logits, n, k, probe, stream_top_k, parts);
}

absl::Status CheckProbe(int n, int probe) {
  if (probe < -1 || probe >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat("probe token: ", probe, " is outside [0, ", n, ") (the row width)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LogitMetrics> FinishLogitMetrics(const base::SoftmaxMoments& moments) {
  if (moments.empty()) {
    return absl::InvalidArgumentError("logits: every entry is -inf (no token is possible)");
  }
  LogitMetrics metrics;
  metrics.entropy = static_cast<float>(moments.EntropyNats() / base::kLn2);
  metrics.varentropy = static_cast<float>(moments.VarentropyNats() / (base::kLn2 * base::kLn2));
  metrics.logsumexp = static_cast<float>(moments.LogSumExp());
  metrics.max_logit = static_cast<float>(moments.max);
  return metrics;
}

absl::StatusOr<LogitSummary> SummarizeLogits(const float* logits, int n, int k, int probe,
                                             const RowSplit& split) {
  RETURN_IF_ERROR(CheckArguments(n, k));
  RETURN_IF_ERROR(CheckProbe(n, probe));
  return FromFloatRow(logits, n, k, probe, split);
}

absl::StatusOr<LogitMetrics> ComputeLogitMetrics(const float* logits, int n, int top_k) {
  ASSIGN_OR_RETURN(LogitSummary summary, SummarizeLogits(logits, n, top_k, /*probe=*/-1));
  summary.metrics.top_k = ToLogprobs(summary.best, summary.logsumexp);
  return summary.metrics;
}

absl::StatusOr<LogitMetrics> ComputeLogitMetrics(const uint16_t* logits_bf16, int n, int top_k) {
  RETURN_IF_ERROR(CheckArguments(n, top_k));
  // Widening is exact, so the float path is the definition; one temporary row keeps a single
  // implementation of the top-K selection.
  std::vector<float> row(n);
  for (int i = 0; i < n; ++i) row[i] = base::Bf16ToFloat(logits_bf16[i]);
  return ComputeLogitMetrics(row.data(), n, top_k);
}

}  // namespace arbor::entropix
