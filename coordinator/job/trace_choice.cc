#include "coordinator/job/trace_choice.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace arbor::coordinator {
namespace {

constexpr size_t kNoteAnswerBytes = 40;  // Longer answers are shortened in notes and reasons.

// Bytes of the text of the first `n` tokens.
size_t PrefixBytes(absl::Span<const int32_t> tokens, size_t n, const DecodeFn& decode) {
  return decode(tokens.first(n)).size();
}

// The token whose text holds byte `byte` of the trace's text: the first i with
// PrefixBytes(i + 1) > byte (the last token when none does). Prefix texts grow with the prefix,
// so a binary search needs O(log n) decodes.
size_t TokenAtByte(absl::Span<const int32_t> tokens, size_t byte, const DecodeFn& decode) {
  size_t lo = 0, hi = tokens.size() - 1;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (PrefixBytes(tokens, mid + 1, decode) > byte) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

double MeanMargin(absl::Span<const float> margins, size_t first, size_t last) {
  if (margins.empty() || first > last) return 0.0;
  double sum = 0.0;
  for (size_t i = first; i <= last; ++i) sum += margins[i];
  return sum / static_cast<double>(last - first + 1);
}

// 0: finished with an answer; 1: cut off with an answer; 2: no answer.
int Tier(const TraceJudgement& t) { return !t.answer ? 2 : t.finished ? 0 : 1; }

// `text` cut to kNoteAnswerBytes on a character boundary, "…" marking the cut.
std::string Shorten(const std::string& text) {
  if (text.size() <= kNoteAnswerBytes) return text;
  size_t cut = kNoteAnswerBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(text.substr(0, cut), "…");
}

std::string Quoted(const std::optional<std::string>& answer) {
  return answer ? absl::StrCat("«", Shorten(*answer), "»") : "no answer";
}

std::string Reason(absl::Span<const TraceJudgement> traces, const TraceRanking& ranking,
                   bool aggregate) {
  const TraceJudgement& best = traces[ranking.order.front()];
  if (!best.answer) {
    return absl::StrFormat(
        "no trace matched the answer pattern; the most confident answers (margin %.3f)",
        best.confidence);
  }
  // The best-ranked trace with another answer, if any.
  const TraceJudgement* runner_up = nullptr;
  double runner_up_support = 0.0;
  for (size_t k = 1; k < ranking.order.size(); ++k) {
    const TraceJudgement& t = traces[ranking.order[k]];
    if (t.answer && *t.answer != *best.answer) {
      runner_up = &t;
      runner_up_support = ranking.support[ranking.order[k]];
      break;
    }
  }
  std::string reason;
  if (aggregate) {
    const auto agrees = [&best](const TraceJudgement& t) {
      return Tier(t) == Tier(best) && t.answer == best.answer;
    };
    const int agreeing = static_cast<int>(std::count_if(traces.begin(), traces.end(), agrees));
    reason =
        absl::StrFormat("answer %s from %d of %d traces, summed margin %.3f", Quoted(best.answer),
                        agreeing, traces.size(), ranking.support[ranking.order.front()]);
  } else {
    reason = absl::StrFormat("answer %s, margin %.3f", Quoted(best.answer), best.confidence);
  }
  if (runner_up != nullptr) {
    absl::StrAppendFormat(&reason, " (next: %s, %.3f)", Quoted(runner_up->answer),
                          runner_up_support);
  }
  if (!best.finished) reason += "; no trace with an answer finished";
  return reason;
}

}  // namespace

float StepMargin(const arbor::v1::StepResult& step) {
  float first = -INFINITY, second = -INFINITY;
  for (const arbor::v1::TokenLogprob& t : step.top_k()) {
    if (t.logprob() > first) {
      second = first;
      first = t.logprob();
    } else if (t.logprob() > second) {
      second = t.logprob();
    }
  }
  if (step.top_k().empty()) return 0.0f;
  return std::exp(first) - (std::isinf(second) ? 0.0f : std::exp(second));
}

TraceJudgement JudgeTrace(absl::Span<const int32_t> tokens, absl::Span<const float> margins,
                          bool finished, const DecodeFn& decode,
                          const base::AnswerPattern* pattern) {
  TraceJudgement judgement;
  judgement.finished = finished;
  const std::string text = decode(tokens);
  if (pattern == nullptr) {
    judgement.answer = std::string(absl::StripAsciiWhitespace(text));
    judgement.confidence = tokens.empty() ? 0.0 : MeanMargin(margins, 0, tokens.size() - 1);
    judgement.answer_tokens = static_cast<int32_t>(tokens.size());
    return judgement;
  }
  const std::optional<std::pair<size_t, size_t>> span = pattern->LastMatchSpan(text);
  if (!span || tokens.empty()) {
    // Ranked below every answer; among traces without one, the most confident overall.
    judgement.confidence = tokens.empty() ? 0.0 : MeanMargin(margins, 0, tokens.size() - 1);
    return judgement;
  }
  judgement.answer = text.substr(span->first, span->second - span->first);
  size_t first = TokenAtByte(tokens, span->first, decode);
  // Tokens just before it that showed no text yet (the first bytes of a character the decoder
  // held back) are part of the answer too.
  while (first > 0 &&
         PrefixBytes(tokens, first, decode) == PrefixBytes(tokens, first - 1, decode)) {
    --first;
  }
  const size_t last =
      span->second > span->first ? TokenAtByte(tokens, span->second - 1, decode) : first;
  judgement.confidence = MeanMargin(margins, first, last);
  judgement.answer_tokens = static_cast<int32_t>(last - first + 1);
  return judgement;
}

TraceRanking RankTraces(absl::Span<const TraceJudgement> traces, bool aggregate) {
  TraceRanking ranking;
  std::map<std::pair<int, std::string>, double> per_answer;  // By (tier, answer).
  for (const TraceJudgement& t : traces) {
    if (t.answer) per_answer[{Tier(t), *t.answer}] += t.confidence;
  }
  for (const TraceJudgement& t : traces) {
    ranking.support.push_back(aggregate && t.answer ? per_answer[{Tier(t), *t.answer}]
                                                    : t.confidence);
  }
  for (int i = 0; i < static_cast<int>(traces.size()); ++i) ranking.order.push_back(i);
  std::stable_sort(ranking.order.begin(), ranking.order.end(), [&](int a, int b) {
    if (Tier(traces[a]) != Tier(traces[b])) return Tier(traces[a]) < Tier(traces[b]);
    if (ranking.support[a] != ranking.support[b]) return ranking.support[a] > ranking.support[b];
    return traces[a].confidence > traces[b].confidence;
  });
  ranking.reason = Reason(traces, ranking, aggregate);
  return ranking;
}

std::string TraceNote(const TraceJudgement& judgement) {
  return absl::StrFormat("%s%s · margin %.3f%s", judgement.answer ? "answer " : "",
                         Quoted(judgement.answer), judgement.confidence,
                         judgement.finished ? "" : " · cut off");
}

}  // namespace arbor::coordinator
