// TRACE mode's arithmetic (docs/ARCHITECTURE.md §4.5), free of RPC and tree state: how confident
// a step was (the top-1 − top-2 probability margin), what a finished trace answered and how
// confidently (the mean margin over its answer's tokens, CoT-decoding's score), and which trace
// answers the job (the most confident, or the answer whose traces sum the most confidence).
#ifndef ARBOR_COORDINATOR_JOB_TRACE_CHOICE_H_
#define ARBOR_COORDINATOR_JOB_TRACE_CHOICE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "arbor/v1/worker.pb.h"
#include "base/answer_pattern.h"

namespace arbor::coordinator {

// p(top-1) − p(top-2) of the distribution `step` was drawn from, from its top-K; p(top-1) when
// the top-K holds one token, 0 when it holds none.
float StepMargin(const arbor::v1::StepResult& step);

// Text of a token sequence (the tokenizer's decode; held-back incomplete bytes are fine).
using DecodeFn = std::function<std::string(absl::Span<const int32_t>)>;

struct TraceJudgement {
  // The answer: the pattern's last match (or the whole trace without a pattern); nullopt when
  // the pattern matched nothing.
  std::optional<std::string> answer;
  double confidence = 0.0;  // Mean margin over the answer's tokens (the whole trace if none).
  int32_t answer_tokens = 0;
  bool finished = true;  // Ended on a stop token (not cut off by max_tokens or the context).
};

// Judges one trace: `tokens` are its generated tokens (no stop token), `margins` one per token,
// `finished` whether it ended on a stop token. The answer's tokens are those whose text overlaps
// the match's bytes.
TraceJudgement JudgeTrace(absl::Span<const int32_t> tokens, absl::Span<const float> margins,
                          bool finished, const DecodeFn& decode,
                          const base::AnswerPattern* pattern);

struct TraceRanking {
  std::vector<int> order;       // Trace indices, the winner first; ties keep index order.
  std::vector<double> support;  // Per trace: what it was ranked by (see RankTraces).
  std::string reason;           // Why order[0] answers, in words.
};

// Ranks traces in tiers: finished with an answer, then cut off with an answer (what it said last
// may not be its answer), then without one. Within a tier, with `aggregate`: by the summed
// confidence of the tier's traces with the same answer, then by their own; otherwise by their
// own confidence alone. `traces` must be non-empty.
TraceRanking RankTraces(absl::Span<const TraceJudgement> traces, bool aggregate);

// One trace's verdict for the tree viewer: "answer «42» · margin 0.81".
std::string TraceNote(const TraceJudgement& judgement);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_TRACE_CHOICE_H_
