// TRACE mode's arithmetic (docs/ARCHITECTURE.md §4.5), free of RPC and tree state: how confident
// a step was (the top-1 − top-2 probability margin; DeepConf's token confidence), what a finished
// trace answered and how confidently (the mean margin over its answer's tokens, CoT-decoding's
// score; its lowest group confidence, DeepConf's), which trace answers the job (the most
// confident, or the answer whose traces sum the most confidence), and when a running trace can
// no longer overtake a finished one.
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
#include "entropix/policy_config.h"

namespace arbor::coordinator {

// How certain the model was of one step, from the top-K of the distribution it was drawn from.
struct TokenCertainty {
  // p(top-1) − p(top-2); p(top-1) when the top-K holds one token, 0 when it holds none.
  float margin = 0.0f;
  // DeepConf's token confidence (entropix/trace_confidence.h); 0 without a top-K.
  float confidence = 0.0f;
};
TokenCertainty StepCertainty(const arbor::v1::StepResult& step);

// Text of a token sequence (the tokenizer's decode; held-back incomplete bytes are fine).
using DecodeFn = std::function<std::string(absl::Span<const int32_t>)>;

struct TraceJudgement {
  // The answer: the pattern's last match (or the whole trace without a pattern); nullopt when
  // the pattern matched nothing.
  std::optional<std::string> answer;
  double confidence = 0.0;  // Mean margin over the answer's tokens (the whole trace if none).
  // The lowest group confidence over the whole trace (trace_confidence.h).
  double group_confidence = 0.0;
  int32_t answer_tokens = 0;
  bool finished = true;  // Ended on a stop token (not cut off by max_tokens or the context).
  bool stopped = false;  // Stopped early: it takes no part in the vote.
  // Stopped because it could no longer overtake a finished trace (TraceSearch's outrank stop),
  // not for low confidence.
  bool outranked = false;
};

// Judges one trace: `tokens` are its generated tokens (no stop token), `certainties` one per
// token, `finished` whether it ended on a stop token; group confidence over windows of
// `confidence_window` tokens. The answer's tokens are those whose text overlaps the match's
// bytes.
TraceJudgement JudgeTrace(absl::Span<const int32_t> tokens,
                          absl::Span<const TokenCertainty> certainties, bool finished,
                          int32_t confidence_window, const DecodeFn& decode,
                          const base::AnswerPattern* pattern);

// How traces vote (entropix::TraceOptions).
struct TraceVoteOptions {
  bool aggregate = true;
  entropix::TraceVote vote = entropix::TraceVote::kMargin;
  float keep_fraction = 1.0f;  // GROUP_CONFIDENCE: the most confident share that votes.
};

struct TraceRanking {
  std::vector<int> order;       // Trace indices, the winner first; ties keep index order.
  std::vector<double> weight;   // Per trace: its own confidence under the vote.
  std::vector<double> support;  // Per trace: what it was ranked by (see RankTraces).
  std::vector<bool> voted;      // Per trace: whether it took part in the vote.
  std::string reason;           // Why order[0] answers, in words.
};

// Ranks traces in tiers: finished with an answer, then cut off with an answer (what it said last
// may not be its answer), then without one, then those left out of the vote (stopped early; with
// GROUP_CONFIDENCE, outside the keep_fraction most confident). A trace's weight is its margin
// or its group confidence, as `options.vote` says. Within a tier, with `aggregate`: by the
// summed weight of the tier's traces with the same answer, then by their own; otherwise by their
// own weight alone. `traces` must be non-empty.
TraceRanking RankTraces(absl::Span<const TraceJudgement> traces, const TraceVoteOptions& options);

// Trace `index`'s verdict for the tree viewer: "answer «42» · margin 0.81".
std::string TraceNote(absl::Span<const TraceJudgement> traces, const TraceRanking& ranking,
                      int index, entropix::TraceVote vote);

// The highest confidence a trace without an answer pattern can still end with: `path` holds the
// certainties of its tokens so far (none a stop token), and it ends with at most `max_tokens`.
// Its confidence is the mean margin over all its tokens, and a margin is at most 1, so the best
// it can do is margins of 1 to the limit: (Σ margins + max_tokens − |path|) / max_tokens, which
// only falls as the trace grows.
double ReachableConfidence(absl::Span<const TokenCertainty> path, int32_t max_tokens);

// Whether traces that open with these texts (each the decoded text of the path up to and with
// its first own token) must end with different answers when the whole trace is the answer: an
// answer is the trace's text without surrounding whitespace, and a trace's text begins with its
// opening text, so two answers can be equal only if one stripped opening is a prefix of the
// other's (an empty one, a held-back byte or only whitespace, is a prefix of all).
bool AnswersStayDistinct(const std::vector<std::string>& openings);

// The stop threshold DeepConf sets from its warm-up traces' lowest group confidences: their
// (1 − keep_fraction) quantile (linear interpolation), so that about keep_fraction of traces
// like them would run to their end. `lowest` must be non-empty.
double WarmupThreshold(std::vector<double> lowest, float keep_fraction);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_TRACE_CHOICE_H_
