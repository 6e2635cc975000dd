// TRACE mode (docs/ARCHITECTURE.md §4.5). Part of class Job (job.h); split from job.cc by concept.
//
// Forks open and roll out through the ROLLOUT machinery (nested_branch.cc), but no branch is
// resolved before every trace has reached its end: the winning answer may sit in any nested
// branch, and with trace.aggregate its support is summed over traces in all of them. Then every
// trace is judged (trace_choice.h), the nested branches are resolved deepest first towards the
// best-ranked trace below each, and the outer branch commits the winner; each candidate keeps
// its trace's verdict as a note, and the outer resolution says why the winner won.
//
// DeepConf's online stop (trace.warmup_traces): the first fork's traces beyond the warm-up are
// held until the warm-up traces are done; their lowest group confidences set the threshold, and
// the held traces then run with the worker stopping each once its window's confidence falls
// below it. Traces forked deeper (trace.fork_entropy) run whole.
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/job/job.h"

namespace arbor::coordinator {
namespace {

template <typename Children>
bool AllTracesDone(const Children& children) {
  return std::all_of(children.begin(), children.end(), [](const auto& child) {
    return child.nested.empty() ? child.done && child.sent : AllTracesDone(child.nested);
  });
}

}  // namespace

int32_t Job::TraceRoom() const { return spec_.policy.trace.max_traces - traces_; }

int Job::ForkWidth(int32_t replaced) const {
  const int width = spec_.policy.ForkWidth();
  return trace() ? std::min(width, TraceRoom() + replaced) : width;
}

void Job::ResolveTraces() {
  if (!AllTracesDone(branch_->children)) {
    ReleaseAfterWarmup();
    if (!finished()) Continue();
    return;
  }
  std::vector<JudgedTrace> judged;
  if (!JudgeTraces(branch_->children, trunk_certainties_, judged)) return;
  std::vector<TraceJudgement> judgements;
  for (const JudgedTrace& trace : judged) judgements.push_back(trace.judgement);
  const entropix::TraceOptions& options = spec_.policy.trace;
  const TraceRanking ranking =
      RankTraces(judgements, {options.aggregate, options.vote, options.keep_fraction});
  std::map<NodeId, int> rank;
  std::vector<double> confidence;
  for (int k = 0; k < static_cast<int>(ranking.order.size()); ++k) {
    const int index = ranking.order[k];
    const JudgedTrace& trace = judged[index];
    rank[trace.leaf] = k;
    confidence.push_back(ranking.weight[index]);
    if (absl::Status noted = tree_.SetBranchNote(
            trace.candidate, TraceNote(judgements, ranking, index, options.vote));
        !noted.ok()) {
      return Fail(noted);
    }
  }
  const std::optional<SiblingRanks> ranks = RankSiblings(branch_->children, rank, confidence);
  if (!ranks) return;
  const Child& chosen = branch_->children[ranks->winner];
  CommitBranch(ranks->winner, ranks->scores, ranking.reason, chosen.sequence_id, SequenceSource{},
               chosen.stop);
}

void Job::HoldBeyondWarmup(std::vector<Child>& children) {
  const int32_t warmup = spec_.policy.trace.warmup_traces;
  if (warmup == 0 || warmup >= static_cast<int32_t>(children.size())) return;
  for (size_t i = static_cast<size_t>(warmup); i < children.size(); ++i) {
    children[i].held = children[i].stoppable = true;
  }
}

void Job::ReleaseAfterWarmup() {
  std::vector<Child> warmup;  // Copies: this runs once per job.
  bool any_held = false;
  for (const Child& child : branch_->children) {
    if (child.held) {
      any_held = true;
    } else {
      warmup.push_back(child);
    }
  }
  if (!any_held || !AllTracesDone(warmup)) return;
  std::vector<JudgedTrace> judged;
  if (!JudgeTraces(warmup, trunk_certainties_, judged)) return;
  std::vector<double> lowest;
  for (const JudgedTrace& trace : judged) lowest.push_back(trace.judgement.group_confidence);
  stop_below_confidence_ = WarmupThreshold(lowest, spec_.policy.trace.keep_fraction);
  for (Child& child : branch_->children) child.held = false;
}

void Job::SetConfidenceStop(const Child& child, arbor::v1::RunItem& item) const {
  if (!child.stoppable || !stop_below_confidence_ || *stop_below_confidence_ <= 0.0) return;
  const int32_t window = spec_.policy.trace.confidence_window;
  item.set_stop_below_confidence(static_cast<float>(*stop_below_confidence_));
  item.set_confidence_window(window);
  // The window spans Runs: the path's latest confidences, the trunk's first.
  std::vector<float> path;
  for (const TokenCertainty& c : trunk_certainties_) path.push_back(c.confidence);
  for (const TokenCertainty& c : child.score.certainties()) path.push_back(c.confidence);
  const size_t keep = std::min(path.size(), static_cast<size_t>(window - 1));
  for (size_t i = path.size() - keep; i < path.size(); ++i) item.add_recent_confidences(path[i]);
}

bool Job::JudgeTraces(const std::vector<Child>& children,
                      const std::vector<TokenCertainty>& certainties,
                      std::vector<JudgedTrace>& out) {
  const size_t prompt = spec_.prompt_token_ids.size();
  for (const Child& child : children) {
    std::vector<TokenCertainty> path = certainties;
    path.insert(path.end(), child.score.certainties().begin(), child.score.certainties().end());
    if (!child.nested.empty()) {
      if (!JudgeTraces(child.nested, path, out)) return false;
      continue;
    }
    std::vector<int32_t> tokens = PathTokens(child.leaf);
    tokens.erase(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(prompt));
    if (tokens.size() != path.size()) {
      Fail(absl::InternalError(absl::StrCat("trace at node ", child.leaf, " has ", tokens.size(),
                                            " tokens but ", path.size(), " certainties")));
      return false;
    }
    const bool finished = !tokens.empty() && IsStopToken(tokens.back());
    if (finished) {
      tokens.pop_back();
      path.pop_back();
    }
    TraceJudgement judgement =
        JudgeTrace(tokens, path, finished, spec_.policy.trace.confidence_window, env_.decode,
                   answer_pattern_.get());
    judgement.stopped = child.stop == arbor::v1::STOP_REASON_LOW_CONFIDENCE;
    out.push_back({child.leaf, child.candidate, std::move(judgement)});
  }
  return true;
}

int Job::ResolveTowards(Child& child, const std::map<NodeId, int>& rank,
                        const std::vector<double>& confidence) {
  if (child.nested.empty()) {
    const auto it = rank.find(child.leaf);
    if (it != rank.end()) return it->second;
    Fail(absl::InternalError(absl::StrCat("trace at node ", child.leaf, " was not judged")));
    return -1;
  }
  const std::optional<SiblingRanks> ranks = RankSiblings(child.nested, rank, confidence);
  if (!ranks) return -1;
  const int best = ranks->best[ranks->winner];
  if (!AdoptNestedWinner(child, ranks->winner, ranks->scores,
                         absl::StrCat("holds the trace ranked ", best + 1))) {
    return -1;
  }
  return best;
}

std::optional<Job::SiblingRanks> Job::RankSiblings(std::vector<Child>& siblings,
                                                   const std::map<NodeId, int>& rank,
                                                   const std::vector<double>& confidence) {
  SiblingRanks ranks;
  for (Child& sibling : siblings) {
    const int r = ResolveTowards(sibling, rank, confidence);
    if (r < 0) return std::nullopt;
    ranks.best.push_back(r);
    ranks.scores.push_back(static_cast<float>(confidence[r]));
  }
  ranks.winner =
      static_cast<int>(std::min_element(ranks.best.begin(), ranks.best.end()) - ranks.best.begin());
  return ranks;
}

}  // namespace arbor::coordinator
