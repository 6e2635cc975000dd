#include "coordinator/job/trace_choice.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "entropix/trace_confidence.h"

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

double MeanMargin(absl::Span<const TokenCertainty> certainties, size_t first, size_t last) {
  if (certainties.empty() || first > last) return 0.0;
  double sum = 0.0;
  for (size_t i = first; i <= last; ++i) sum += certainties[i].margin;
  return sum / static_cast<double>(last - first + 1);
}

double LowestGroupConfidence(absl::Span<const TokenCertainty> certainties, int32_t window) {
  entropix::GroupConfidence group(window);
  for (const TokenCertainty& c : certainties) group.Add(c.confidence);
  return group.lowest();
}

// 0: finished with an answer; 1: cut off with an answer; 2: no answer; 3: left out of the vote.
int Tier(const TraceJudgement& t, bool voted) {
  if (!voted) return 3;
  return !t.answer ? 2 : t.finished ? 0 : 1;
}

const char* MeasureName(entropix::TraceVote vote) {
  return vote == entropix::TraceVote::kGroupConfidence ? "confidence" : "margin";
}

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
                   const TraceVoteOptions& options) {
  const int winner = ranking.order.front();
  const TraceJudgement& best = traces[winner];
  const char* measure = MeasureName(options.vote);
  if (!best.answer) {
    return absl::StrFormat(
        "no trace matched the answer pattern; the most confident answers (%s %.3f)", measure,
        ranking.weight[winner]);
  }
  // The best-ranked voting trace with another answer, if any.
  const TraceJudgement* runner_up = nullptr;
  double runner_up_support = 0.0;
  for (size_t k = 1; k < ranking.order.size(); ++k) {
    const int i = ranking.order[k];
    if (ranking.voted[i] && traces[i].answer && *traces[i].answer != *best.answer) {
      runner_up = &traces[i];
      runner_up_support = ranking.support[i];
      break;
    }
  }
  std::string reason;
  if (options.aggregate) {
    int agreeing = 0;
    for (size_t i = 0; i < traces.size(); ++i) {
      agreeing += Tier(traces[i], ranking.voted[i]) == Tier(best, ranking.voted[winner]) &&
                  traces[i].answer == best.answer;
    }
    reason = absl::StrFormat("answer %s from %d of %d traces, summed %s %.3f",
                             Quoted(best.answer), agreeing, traces.size(), measure,
                             ranking.support[winner]);
  } else {
    reason = absl::StrFormat("answer %s, %s %.3f", Quoted(best.answer), measure,
                             ranking.weight[winner]);
  }
  if (runner_up != nullptr) {
    absl::StrAppendFormat(&reason, " (next: %s, %.3f)", Quoted(runner_up->answer),
                          runner_up_support);
  }
  const int left_out = static_cast<int>(std::count(ranking.voted.begin(), ranking.voted.end(), false));
  if (left_out > 0) absl::StrAppendFormat(&reason, "; %d traces left out of the vote", left_out);
  if (!best.finished) reason += "; no trace with an answer finished";
  return reason;
}

// Which traces vote: not those stopped early, and with GROUP_CONFIDENCE only the keep_fraction
// most confident of the rest (at least one; ties keep the earlier trace).
std::vector<bool> Voters(absl::Span<const TraceJudgement> traces,
                         const TraceVoteOptions& options) {
  std::vector<bool> voted(traces.size());
  std::vector<int> eligible;
  for (size_t i = 0; i < traces.size(); ++i) {
    if (!traces[i].stopped) eligible.push_back(static_cast<int>(i));
  }
  size_t keep = eligible.size();
  if (options.vote == entropix::TraceVote::kGroupConfidence) {
    keep = std::max<size_t>(1, static_cast<size_t>(std::ceil(options.keep_fraction *
                                                             static_cast<double>(keep) - 1e-9)));
    std::stable_sort(eligible.begin(), eligible.end(), [&](int a, int b) {
      return traces[a].group_confidence > traces[b].group_confidence;
    });
  }
  for (size_t k = 0; k < std::min(keep, eligible.size()); ++k) voted[eligible[k]] = true;
  return voted;
}

}  // namespace

TokenCertainty StepCertainty(const arbor::v1::StepResult& step) {
  if (step.top_k().empty()) return {};
  std::vector<float> logprobs;
  for (const arbor::v1::TokenLogprob& t : step.top_k()) logprobs.push_back(t.logprob());
  std::sort(logprobs.begin(), logprobs.end(), std::greater<float>());
  TokenCertainty certainty;
  certainty.margin =
      std::exp(logprobs[0]) - (logprobs.size() > 1 ? std::exp(logprobs[1]) : 0.0f);
  certainty.confidence = entropix::TokenConfidence(logprobs);
  return certainty;
}

TraceJudgement JudgeTrace(absl::Span<const int32_t> tokens,
                          absl::Span<const TokenCertainty> certainties, bool finished,
                          int32_t confidence_window, const DecodeFn& decode,
                          const base::AnswerPattern* pattern) {
  TraceJudgement judgement;
  judgement.finished = finished;
  judgement.group_confidence = LowestGroupConfidence(certainties, confidence_window);
  const std::string text = decode(tokens);
  if (pattern == nullptr) {
    judgement.answer = std::string(absl::StripAsciiWhitespace(text));
    judgement.confidence = tokens.empty() ? 0.0 : MeanMargin(certainties, 0, tokens.size() - 1);
    judgement.answer_tokens = static_cast<int32_t>(tokens.size());
    return judgement;
  }
  const std::optional<std::pair<size_t, size_t>> span = pattern->LastMatchSpan(text);
  if (!span || tokens.empty()) {
    // Ranked below every answer; among traces without one, the most confident overall.
    judgement.confidence = tokens.empty() ? 0.0 : MeanMargin(certainties, 0, tokens.size() - 1);
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
  judgement.confidence = MeanMargin(certainties, first, last);
  judgement.answer_tokens = static_cast<int32_t>(last - first + 1);
  return judgement;
}

TraceRanking RankTraces(absl::Span<const TraceJudgement> traces,
                        const TraceVoteOptions& options) {
  TraceRanking ranking;
  ranking.voted = Voters(traces, options);
  for (const TraceJudgement& t : traces) {
    ranking.weight.push_back(options.vote == entropix::TraceVote::kGroupConfidence
                                 ? t.group_confidence
                                 : t.confidence);
  }
  const auto tier = [&](int i) { return Tier(traces[i], ranking.voted[i]); };
  std::map<std::pair<int, std::string>, double> per_answer;  // By (tier, answer).
  for (size_t i = 0; i < traces.size(); ++i) {
    if (traces[i].answer) per_answer[{tier(i), *traces[i].answer}] += ranking.weight[i];
  }
  for (size_t i = 0; i < traces.size(); ++i) {
    ranking.support.push_back(options.aggregate && traces[i].answer
                                  ? per_answer[{tier(i), *traces[i].answer}]
                                  : ranking.weight[i]);
  }
  for (int i = 0; i < static_cast<int>(traces.size()); ++i) ranking.order.push_back(i);
  std::stable_sort(ranking.order.begin(), ranking.order.end(), [&](int a, int b) {
    if (tier(a) != tier(b)) return tier(a) < tier(b);
    if (ranking.support[a] != ranking.support[b]) return ranking.support[a] > ranking.support[b];
    return ranking.weight[a] > ranking.weight[b];
  });
  ranking.reason = Reason(traces, ranking, options);
  return ranking;
}

std::string TraceNote(absl::Span<const TraceJudgement> traces, const TraceRanking& ranking,
                      int index, entropix::TraceVote vote) {
  const TraceJudgement& t = traces[index];
  std::string note = absl::StrFormat("%s%s · %s %.3f", t.answer ? "answer " : "",
                                     Quoted(t.answer), MeasureName(vote), ranking.weight[index]);
  if (!t.finished) note += " · cut off";
  if (t.outranked) {
    note += " · stopped: could not overtake a finished trace";
  } else if (t.stopped) {
    note += " · stopped: confidence fell";
  } else if (!ranking.voted[index]) {
    note += " · not among the most confident";
  }
  return note;
}

double ReachableConfidence(absl::Span<const TokenCertainty> path, int32_t max_tokens) {
  if (max_tokens <= 0) return 0.0;
  double sum = 0.0;
  for (const TokenCertainty& c : path) sum += c.margin;
  const double left = std::max<double>(0.0, max_tokens - static_cast<double>(path.size()));
  return (sum + left) / static_cast<double>(max_tokens);
}

bool AnswersStayDistinct(const std::vector<std::string>& openings) {
  std::vector<absl::string_view> stripped;
  for (const std::string& text : openings) stripped.push_back(absl::StripAsciiWhitespace(text));
  for (size_t i = 0; i < stripped.size(); ++i) {
    for (size_t j = 0; j < stripped.size(); ++j) {
      if (i != j && absl::StartsWith(stripped[j], stripped[i])) return false;
    }
  }
  return true;
}

double WarmupThreshold(std::vector<double> lowest, float keep_fraction) {
  std::sort(lowest.begin(), lowest.end());
  const double at = (1.0 - keep_fraction) * static_cast<double>(lowest.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(at));
  const size_t above = std::min(below + 1, lowest.size() - 1);
  return lowest[below] + (at - static_cast<double>(below)) * (lowest[above] - lowest[below]);
}

}  // namespace arbor::coordinator
