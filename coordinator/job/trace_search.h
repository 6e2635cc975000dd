// TRACE mode (docs/ARCHITECTURE.md §4.5): CoT-decoding, EAGer and DeepConf over the tree.
//
// Forks open and roll out as in ROLLOUT (rollout_search.h), but no branch is resolved before
// every trace has reached its end: the winning answer may sit in any nested branch, and with
// trace.aggregate its support is summed over traces in all of them. A fork opens no more
// candidates than trace.max_traces leaves room for. Once all are done, every trace is judged
// (trace_choice.h), the nested branches are resolved deepest first towards the best-ranked trace
// below each, and the branch commits the winner; each candidate keeps its trace's verdict as a
// note, and the resolution says why the winner won.
//
// trace.token_budget: no fork opens once the committed and explored tokens reach it.
//
// trace.commit_rank r: the trace ranked r + 1 is committed instead of the best (the nested
// branches resolve towards it); the ranking itself, and so every note, is unchanged. Fewer than
// r + 1 traces fail the job, since committing another would repeat a sibling job's answer.
//
// DeepConf's online stop (trace.warmup_traces): the fork's traces beyond the warm-up are held
// until the warm-up traces are done; their lowest group confidences set the threshold, and the
// held traces then run with the worker stopping each once its window's confidence falls below
// it. Traces forked deeper (trace.fork_entropy) run whole.
//
// The outrank stop: a trace that can no longer overtake a finished one stops, so that a search
// costs what can still change its answer. It applies where a trace's best reachable confidence
// is known (ReachableConfidence: no answer pattern, the MARGIN vote) and stopping one trace
// changes nothing else: no nested forks (trace.max_depth 1), no warm-up, commit_rank 0 (the
// runner-up is not wanted), and, with trace.aggregate, openings whose answers must stay
// distinct (AnswersStayDistinct), so no trace can add to another's support. Traces then run
// kOutrankChunk tokens a Run, and after each Run every running trace whose reachable confidence
// is below the best finished trace's stops (`Rollout::outranked`; judged as left out of the
// vote). The winner and its text are those of the search without the stop; the decision falls at
// fixed lengths and reads only the traces' own tokens, so it is the same under any load.
#ifndef ARBOR_COORDINATOR_JOB_TRACE_SEARCH_H_
#define ARBOR_COORDINATOR_JOB_TRACE_SEARCH_H_

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/answer_pattern.h"
#include "coordinator/job/rollout_search.h"
#include "coordinator/job/trace_choice.h"
#include "entropix/policy_config.h"

namespace arbor::coordinator {

class TraceSearch : public RolloutSearch {
 public:
  // Tokens a trace runs per Run while the outrank stop applies: each Run's end is a chance to
  // stop the traces that can no longer win, and costs a round trip to the worker.
  static constexpr int32_t kOutrankChunk = 8;

  // `trunk`: the certainties of the committed generated tokens above the branch point;
  // `answer_pattern`: what a trace's answer is (null: the whole trace).
  TraceSearch(NodeId point, std::vector<Rollout> rollouts, const entropix::TraceOptions& options,
              std::vector<TokenCertainty> trunk,
              std::shared_ptr<const base::AnswerPattern> answer_pattern);

 protected:
  Next Send(BranchHost& host) override;
  int ForkWidth(const entropix::PolicyConfig& policy, int32_t replaced) const override;
  int32_t StepLimit(const Rollout& rollout, int32_t left) const override;
  Next Resolve(BranchHost& host) override;
  // The early stop of a stoppable trace's next Run (threshold, window, recent confidences).
  void AddEarlyStop(const Rollout& rollout, arbor::v1::RunItem& item) const override;

 private:
  // One finished trace: its leaf, the candidate it forked with, and the verdict on it.
  struct JudgedTrace {
    NodeId leaf = kNoNode;
    NodeId candidate = kNoNode;
    TraceJudgement judgement;
  };
  // Per sibling the rank of its best trace and that trace's confidence, and which sibling holds
  // the best.
  struct SiblingRanks {
    std::vector<int> best;
    std::vector<float> scores;
    int winner = 0;
  };

  // `order` (trace indices, best first) with the trace at trace.commit_rank moved to the front;
  // FAILED_PRECONDITION when there are too few traces.
  absl::StatusOr<std::vector<int>> CommitOrder(std::vector<int> order) const;
  // Whether the outrank stop applies to this search (see above).
  bool OutrankStopApplies(BranchHost& host) const;
  // Stops every running trace that can no longer overtake the best finished one.
  absl::Status StopOutranked(BranchHost& host);
  // Once the warm-up traces are done, sets the stop threshold from them and lets the held
  // traces run.
  absl::Status ReleaseAfterWarmup(BranchHost& host);
  // Judges every trace below `rollouts`, `certainties` holding those of the path above them.
  absl::Status Judge(BranchHost& host, const std::vector<Rollout>& rollouts,
                     const std::vector<TokenCertainty>& certainties,
                     std::vector<JudgedTrace>& out) const;
  // Resolves the nested branches below `rollout` towards its best-ranked trace (`rank`: leaf to
  // rank, 0 best; `confidence`: per rank) and returns that rank.
  absl::StatusOr<int> ResolveTowards(BranchHost& host, Rollout& rollout,
                                     const std::map<NodeId, int>& rank,
                                     const std::vector<double>& confidence);
  // ResolveTowards on each of `siblings`.
  absl::StatusOr<SiblingRanks> RankSiblings(BranchHost& host, std::vector<Rollout>& siblings,
                                            const std::map<NodeId, int>& rank,
                                            const std::vector<double>& confidence);

  const entropix::TraceOptions options_;
  const std::vector<TokenCertainty> trunk_;
  const std::shared_ptr<const base::AnswerPattern> answer_pattern_;
  std::optional<double> stop_below_confidence_;  // Set by the warm-up traces.
  std::optional<bool> outrank_stop_;             // Decided before the first Run.
  // The outrank stop's record: which rollouts_ it has judged, and the best finished confidence.
  std::vector<bool> outrank_judged_;
  std::optional<double> best_finished_confidence_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_TRACE_SEARCH_H_
