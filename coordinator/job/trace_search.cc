// TRACE mode (docs/ARCHITECTURE.md §4.5). Part of class Job (job.h); split from job.cc by concept.
//
// Forks open and roll out through the ROLLOUT machinery (nested_branch.cc), but no branch is
// resolved before every trace has reached its end: the winning answer may sit in any nested
// branch, and with trace.aggregate its support is summed over traces in all of them. Then every
// trace is judged (trace_choice.h), the nested branches are resolved deepest first towards the
// best-ranked trace below each, and the outer branch commits the winner; each candidate keeps
// its trace's verdict as a note, and the outer resolution says why the winner won.
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
  if (!AllTracesDone(branch_->children)) return Continue();
  std::vector<JudgedTrace> judged;
  if (!JudgeTraces(branch_->children, trunk_margins_, judged)) return;
  std::vector<TraceJudgement> judgements;
  for (const JudgedTrace& trace : judged) judgements.push_back(trace.judgement);
  const TraceRanking ranking = RankTraces(judgements, spec_.policy.trace.aggregate);
  std::map<NodeId, int> rank;
  std::vector<double> confidence;
  for (int k = 0; k < static_cast<int>(ranking.order.size()); ++k) {
    const JudgedTrace& trace = judged[ranking.order[k]];
    rank[trace.leaf] = k;
    confidence.push_back(trace.judgement.confidence);
    if (absl::Status noted = tree_.SetBranchNote(trace.candidate, TraceNote(trace.judgement));
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

bool Job::JudgeTraces(const std::vector<Child>& children, const std::vector<float>& margins,
                      std::vector<JudgedTrace>& out) {
  const size_t prompt = spec_.prompt_token_ids.size();
  for (const Child& child : children) {
    std::vector<float> path_margins = margins;
    path_margins.insert(path_margins.end(), child.score.margins().begin(),
                        child.score.margins().end());
    if (!child.nested.empty()) {
      if (!JudgeTraces(child.nested, path_margins, out)) return false;
      continue;
    }
    std::vector<int32_t> tokens = PathTokens(child.leaf);
    tokens.erase(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(prompt));
    if (tokens.size() != path_margins.size()) {
      Fail(absl::InternalError(absl::StrCat("trace at node ", child.leaf, " has ", tokens.size(),
                                            " tokens but ", path_margins.size(), " margins")));
      return false;
    }
    const bool finished = !tokens.empty() && IsStopToken(tokens.back());
    if (finished) {
      tokens.pop_back();
      path_margins.pop_back();
    }
    out.push_back({child.leaf, child.candidate,
                   JudgeTrace(tokens, path_margins, finished, env_.decode, answer_pattern_.get())});
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
