#include "coordinator/job/trace_search.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace arbor::coordinator {
namespace {

// Tokens the rollouts (and those nested in them) have explored, their candidates included.
int64_t ExploredTokens(const std::vector<Rollout>& rollouts) {
  int64_t tokens = 0;
  for (const Rollout& rollout : rollouts) {
    tokens += rollout.score.tokens() + ExploredTokens(rollout.nested);
  }
  return tokens;
}

bool AllTracesDone(const std::vector<Rollout>& rollouts) {
  return std::all_of(rollouts.begin(), rollouts.end(), [](const Rollout& rollout) {
    return rollout.nested.empty() ? rollout.done && rollout.sent : AllTracesDone(rollout.nested);
  });
}

}  // namespace

TraceSearch::TraceSearch(NodeId point, std::vector<Rollout> rollouts,
                         const entropix::TraceOptions& options, std::vector<TokenCertainty> trunk,
                         std::shared_ptr<const base::AnswerPattern> answer_pattern)
    : RolloutSearch(point, std::move(rollouts)),
      options_(options),
      trunk_(std::move(trunk)),
      answer_pattern_(std::move(answer_pattern)) {
  const size_t warmup = static_cast<size_t>(options_.warmup_traces);
  if (warmup == 0 || warmup >= rollouts_.size()) return;
  for (size_t i = warmup; i < rollouts_.size(); ++i) {
    rollouts_[i].held = rollouts_[i].stoppable = true;
  }
}

BranchStrategy::Next TraceSearch::Send(BranchHost& host) {
  if (!outrank_stop_) outrank_stop_ = OutrankStopApplies(host);
  return RolloutSearch::Send(host);
}

bool TraceSearch::OutrankStopApplies(BranchHost& host) const {
  const entropix::PolicyConfig& policy = host.spec().policy;
  if (answer_pattern_ != nullptr || options_.vote != entropix::TraceVote::kMargin ||
      policy.MaxForkDepth() > 1 || options_.warmup_traces > 0 || options_.commit_rank != 0 ||
      rollouts_.size() < 2) {
    return false;
  }
  if (!options_.aggregate) return true;
  const size_t prompt = host.spec().prompt_token_ids.size();
  std::vector<std::string> openings;
  for (const Rollout& rollout : rollouts_) {
    std::vector<int32_t> tokens = PathTokens(host.tree(), rollout.candidate);
    tokens.erase(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(prompt));
    openings.push_back(host.Decode(tokens));
  }
  return AnswersStayDistinct(openings);
}

int32_t TraceSearch::StepLimit(const Rollout& rollout, int32_t left) const {
  if (!outrank_stop_.value_or(false)) return left;
  const int32_t tokens = rollout.score.tokens();
  return std::min(left, (tokens / kOutrankChunk + 1) * kOutrankChunk - tokens);
}

absl::Status TraceSearch::StopOutranked(BranchHost& host) {
  if (!outrank_stop_.value_or(false)) return absl::OkStatus();
  // Copies of the traces done since the last Run, judged below: one that is done stays as it is.
  std::vector<Rollout> ended;
  outrank_judged_.resize(rollouts_.size(), false);
  for (size_t i = 0; i < rollouts_.size(); ++i) {
    const Rollout& rollout = rollouts_[i];
    if (!rollout.done || !rollout.sent || rollout.outranked || outrank_judged_[i]) continue;
    ended.push_back(rollout);
    outrank_judged_[i] = true;
  }
  std::vector<JudgedTrace> judged;
  RETURN_IF_ERROR(Judge(host, ended, trunk_, judged));
  std::optional<double>& best = best_finished_confidence_;
  for (const JudgedTrace& trace : judged) {
    const TraceJudgement& j = trace.judgement;
    if (j.finished && j.answer && (!best || j.confidence > *best)) best = j.confidence;
  }
  if (!best) return absl::OkStatus();
  // Absorbs the rounding between this bound's sum and the judge's mean.
  constexpr double kSlack = 1e-6;
  for (Rollout& rollout : rollouts_) {
    if (rollout.done || !rollout.sent) continue;
    std::vector<TokenCertainty> path = trunk_;
    path.insert(path.end(), rollout.score.certainties().begin(), rollout.score.certainties().end());
    const int32_t limit = static_cast<int32_t>(trunk_.size()) + rollout.max_len;
    if (ReachableConfidence(path, limit) < *best - kSlack) {
      rollout.done = rollout.outranked = true;
      host.EndTrace(rollout.sequence_id);
    }
  }
  return absl::OkStatus();
}

int TraceSearch::ForkWidth(const entropix::PolicyConfig& policy, int32_t replaced) const {
  const int64_t spent = static_cast<int64_t>(trunk_.size()) + ExploredTokens(rollouts_);
  if (options_.token_budget > 0 && spent >= options_.token_budget) return 0;
  return std::min(policy.ForkWidth(), options_.max_traces - leaves() + replaced);
}

BranchStrategy::Next TraceSearch::Resolve(BranchHost& host) {
  RETURN_IF_ERROR(StopOutranked(host));
  if (!AllTracesDone(rollouts_)) {
    RETURN_IF_ERROR(ReleaseAfterWarmup(host));
    return std::optional<BranchCommit>();
  }
  std::vector<JudgedTrace> judged;
  RETURN_IF_ERROR(Judge(host, rollouts_, trunk_, judged));
  std::vector<TraceJudgement> judgements;
  for (const JudgedTrace& trace : judged) judgements.push_back(trace.judgement);
  const TraceRanking ranking =
      RankTraces(judgements, {options_.aggregate, options_.vote, options_.keep_fraction});
  ASSIGN_OR_RETURN(const std::vector<int> order, CommitOrder(ranking.order));
  std::map<NodeId, int> rank;
  std::vector<double> confidence;
  for (int k = 0; k < static_cast<int>(order.size()); ++k) {
    const int index = order[k];
    const JudgedTrace& trace = judged[index];
    rank[trace.leaf] = k;
    confidence.push_back(ranking.weight[index]);
    RETURN_IF_ERROR(host.tree().SetBranchNote(
        trace.candidate, TraceNote(judgements, ranking, index, options_.vote)));
  }
  ASSIGN_OR_RETURN(const SiblingRanks ranks, RankSiblings(host, rollouts_, rank, confidence));
  const Rollout& chosen = rollouts_[ranks.winner];
  BranchCommit commit;
  commit.winner_leaf = chosen.leaf;
  commit.scores = ranks.scores;
  commit.reason =
      options_.commit_rank == 0
          ? ranking.reason
          : absl::StrCat("trace.commit_rank ", options_.commit_rank, ": the trace ranked ",
                         options_.commit_rank + 1, " of ", order.size(), ", ",
                         TraceNote(judgements, ranking, order[0], options_.vote));
  commit.main_sequence = chosen.sequence_id;
  commit.stop = chosen.stop;
  return commit;
}

absl::StatusOr<std::vector<int>> TraceSearch::CommitOrder(std::vector<int> order) const {
  const size_t rank = static_cast<size_t>(options_.commit_rank);
  if (rank >= order.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("trace.commit_rank ", rank, " asks for the trace ranked ", rank + 1,
                     ", but the search opened only ", order.size(),
                     " distinct traces (over HTTP: choice ", rank + 1,
                     " of n); ask for fewer, or let forks open more (trace.width, "
                     "trace.candidate_min_p)"));
  }
  std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(rank),
              order.begin() + static_cast<std::ptrdiff_t>(rank) + 1);
  return order;
}

absl::Status TraceSearch::ReleaseAfterWarmup(BranchHost& host) {
  std::vector<Rollout> warmup;  // Copies: this runs once per branch.
  bool any_held = false;
  for (const Rollout& rollout : rollouts_) {
    if (rollout.held) {
      any_held = true;
    } else {
      warmup.push_back(rollout);
    }
  }
  if (!any_held || !AllTracesDone(warmup)) return absl::OkStatus();
  std::vector<JudgedTrace> judged;
  RETURN_IF_ERROR(Judge(host, warmup, trunk_, judged));
  std::vector<double> lowest;
  for (const JudgedTrace& trace : judged) lowest.push_back(trace.judgement.group_confidence);
  stop_below_confidence_ = WarmupThreshold(lowest, options_.keep_fraction);
  for (Rollout& rollout : rollouts_) rollout.held = false;
  return absl::OkStatus();
}

void TraceSearch::AddEarlyStop(const Rollout& rollout, arbor::v1::RunItem& item) const {
  if (!rollout.stoppable || !stop_below_confidence_ || *stop_below_confidence_ <= 0.0) return;
  const int32_t window = options_.confidence_window;
  item.set_stop_below_confidence(static_cast<float>(*stop_below_confidence_));
  item.set_confidence_window(window);
  // The window spans Runs: the path's latest confidences, the trunk's first.
  std::vector<float> path;
  for (const TokenCertainty& c : trunk_) path.push_back(c.confidence);
  for (const TokenCertainty& c : rollout.score.certainties()) path.push_back(c.confidence);
  const size_t keep = std::min(path.size(), static_cast<size_t>(window - 1));
  for (size_t i = path.size() - keep; i < path.size(); ++i) item.add_recent_confidences(path[i]);
}

absl::Status TraceSearch::Judge(BranchHost& host, const std::vector<Rollout>& rollouts,
                                const std::vector<TokenCertainty>& certainties,
                                std::vector<JudgedTrace>& out) const {
  const size_t prompt = host.spec().prompt_token_ids.size();
  const DecodeFn decode = [&host](absl::Span<const int32_t> tokens) { return host.Decode(tokens); };
  for (const Rollout& rollout : rollouts) {
    std::vector<TokenCertainty> path = certainties;
    path.insert(path.end(), rollout.score.certainties().begin(), rollout.score.certainties().end());
    if (!rollout.nested.empty()) {
      RETURN_IF_ERROR(Judge(host, rollout.nested, path, out));
      continue;
    }
    std::vector<int32_t> tokens = PathTokens(host.tree(), rollout.leaf);
    tokens.erase(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(prompt));
    if (tokens.size() != path.size()) {
      return absl::InternalError(absl::StrCat("trace at node ", rollout.leaf, " has ",
                                              tokens.size(), " tokens but ", path.size(),
                                              " certainties"));
    }
    const bool finished = !tokens.empty() && host.IsStopToken(tokens.back());
    if (finished) {
      tokens.pop_back();
      path.pop_back();
    }
    TraceJudgement judgement = JudgeTrace(tokens, path, finished, options_.confidence_window,
                                          decode, answer_pattern_.get());
    judgement.outranked = rollout.outranked;
    judgement.stopped = rollout.outranked || rollout.stop == arbor::v1::STOP_REASON_LOW_CONFIDENCE;
    out.push_back({rollout.leaf, rollout.candidate, std::move(judgement)});
  }
  return absl::OkStatus();
}

absl::StatusOr<int> TraceSearch::ResolveTowards(BranchHost& host, Rollout& rollout,
                                                const std::map<NodeId, int>& rank,
                                                const std::vector<double>& confidence) {
  if (rollout.nested.empty()) {
    const auto it = rank.find(rollout.leaf);
    if (it != rank.end()) return it->second;
    return absl::InternalError(absl::StrCat("trace at node ", rollout.leaf, " was not judged"));
  }
  ASSIGN_OR_RETURN(const SiblingRanks ranks, RankSiblings(host, rollout.nested, rank, confidence));
  const int best = ranks.best[ranks.winner];
  RETURN_IF_ERROR(AdoptNestedWinner(host, rollout, ranks.winner, ranks.scores,
                                    absl::StrCat("holds the trace ranked ", best + 1)));
  return best;
}

absl::StatusOr<TraceSearch::SiblingRanks> TraceSearch::RankSiblings(
    BranchHost& host, std::vector<Rollout>& siblings, const std::map<NodeId, int>& rank,
    const std::vector<double>& confidence) {
  SiblingRanks ranks;
  for (Rollout& sibling : siblings) {
    ASSIGN_OR_RETURN(const int r, ResolveTowards(host, sibling, rank, confidence));
    ranks.best.push_back(r);
    ranks.scores.push_back(static_cast<float>(confidence[r]));
  }
  ranks.winner =
      static_cast<int>(std::min_element(ranks.best.begin(), ranks.best.end()) - ranks.best.begin());
  return ranks;
}

}  // namespace arbor::coordinator
