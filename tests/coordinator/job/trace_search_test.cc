// TRACE mode's branches (coordinator/job/trace_search.h) driven through a fake BranchHost alone
// (fake_branch_host.h), the strategy made as the job makes it: a TracePlanner fed the main-path
// steps plans the fork and opens the TraceSearch. The test plays the worker with hand-built
// top-K distributions, so every margin and confidence is known: CoT-decoding's traces run to
// their ends in one batched Run and none is judged before all are done, the answer with the best
// summed support (or the single most confident trace) is committed, traces without an answer
// rank last, trace.max_traces and trace.token_budget bound the forks, a nested branch waits for
// every trace, DeepConf's held traces run with the threshold their warm-up set, and a trace that
// can no longer overtake a finished one stops.
#include "coordinator/job/trace_search.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "arbor/v1/worker.pb.h"
#include "base/answer_pattern.h"
#include "coordinator/job/trace_planner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/job/fake_branch_host.h"

namespace arbor::coordinator {
namespace {

using arbor::v1::RunItem;
using arbor::v1::RunResponse;
using arbor::v1::RunResult;
using arbor::v1::StepResult;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using testing::FakeBranchHost;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::kFirstRolloutSequence;
using testing::kHostEos;
using testing::kMainSequence;
using testing::StepMetrics;

constexpr int32_t kPrompt = 3;      // FakeHostSpec's prompt length.
constexpr int32_t kMaxTokens = 10;  // Every job here may generate this many tokens.
constexpr int32_t kFiller = 60;     // A runner-up token that decodes to no digit.

// A distribution's top-K from probabilities, most likely first.
using Probs = std::vector<std::pair<int32_t, double>>;

std::vector<TokenAlternative> TopK(const Probs& probs) {
  std::vector<TokenAlternative> top_k;
  for (const auto& [token, p] : probs) top_k.push_back({token, static_cast<float>(std::log(p))});
  return top_k;
}

// One sampled step of a trace: its token, drawn from `probs` (whose top-K the step reports).
struct Drawn {
  int32_t token = 0;
  Probs probs;
};

// `token` at probability p with kFiller at q: margin p − q.
Drawn Margin(int32_t token, double p, double q) { return {token, {{token, p}, {kFiller, q}}}; }
Drawn Eos() { return {kHostEos, {{kHostEos, 1.0}}}; }
// A peaked step: `token` at 0.9 and ten fillers at 0.01.
Drawn Confident(int32_t token) {
  Drawn drawn{token, {{token, 0.9}}};
  for (int32_t filler = 50; filler < 60; ++filler) drawn.probs.emplace_back(filler, 0.01);
  return drawn;
}
// A step torn between `token` (0.55) and kFiller (0.45).
Drawn Doubtful(int32_t token) { return {token, {{token, 0.55}, {kFiller, 0.45}}}; }

// DeepConf's token confidence of a step drawn from `probs`: the mean negative logprob of its
// top-K (trace_confidence.h), by hand.
double ConfidenceOf(const Probs& probs) {
  double sum = 0.0;
  for (const auto& entry : probs) sum -= std::log(entry.second);
  return sum / static_cast<double>(probs.size());
}

arbor::v1::Metrics Calm() { return StepMetrics(0.1f, 0.1f); }

StepResult BranchStep(int32_t position, const Probs& probs) {
  return testing::StructuralStep(position, arbor::v1::STRATEGY_BRANCH, TopK(probs),
                                 StepMetrics(2.0f, 6.0f));
}

JobSpec TraceSpec() {
  JobSpec spec = testing::FakeHostSpec(kMaxTokens);
  spec.policy.mode = entropix::PolicyMode::kTrace;
  return spec;
}

class TraceSearchTest : public ::testing::Test {
 protected:
  // The host and the job's planner for `spec`, answers matching `pattern` (empty: none, the whole
  // trace answers).
  void Make(JobSpec spec, const std::string& pattern) {
    std::shared_ptr<const base::AnswerPattern> compiled;
    if (!pattern.empty()) {
      absl::StatusOr<std::shared_ptr<const base::AnswerPattern>> made =
          base::AnswerPattern::Compile(pattern);
      ASSERT_TRUE(made.ok()) << made.status();
      compiled = *std::move(made);
    }
    host_ = std::make_unique<FakeBranchHost>(std::move(spec));
    planner_ = std::make_unique<TracePlanner>(host_->spec().policy, std::move(compiled));
  }

  // A main-path step of `token` drawn from `probs`, recorded by the host and the planner alike.
  void MainStep(const Drawn& drawn) {
    const StepResult step = testing::TokenStep(host_->tree().NextPosition(), drawn.token,
                                               LogprobOf(drawn), Calm(), TopK(drawn.probs));
    ASSERT_TRUE(host_->CommitMainStep(step).ok());
    planner_->OnMainStep(step);
  }

  // The main path's fork at the next position as the job opens it: the planner's plan, the
  // candidates drawn from `probs` (the most likely, as TRACE draws them), the planner's strategy.
  void Open(const Probs& probs) {
    plan_ = planner_->Plan(host_->Remaining());
    ASSERT_GE(plan_.width, 1) << "the planner opens no fork";
    absl::StatusOr<std::vector<Rollout>> rollouts =
        host_->OpenMainBranch(BranchStep(host_->tree().NextPosition(), probs), plan_);
    ASSERT_TRUE(rollouts.ok()) << rollouts.status();
    ASSERT_FALSE(rollouts->empty());
    rollouts_ = *rollouts;
    search_ = planner_->Open(host_->tree().tail(), *std::move(rollouts));
  }

  // Sends the next Run, which must not commit yet.
  void SendRun() {
    BranchStrategy::Next next = host_->Send(*search_);
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_FALSE(next->has_value()) << "committed instead of sending";
  }

  // `steps` at the next positions of `sequence`, ending for `stop`.
  RunResult Ran(uint64_t sequence, const std::vector<Drawn>& steps,
                arbor::v1::StopReason stop) const {
    RunResult result;
    result.set_sequence_id(sequence);
    int32_t position = host_->Length(sequence);
    for (const Drawn& drawn : steps) {
      *result.add_steps() =
          testing::TokenStep(position++, drawn.token, LogprobOf(drawn), Calm(), TopK(drawn.probs));
    }
    result.set_stop_reason(stop);
    result.set_length(position);
    return result;
  }
  RunResult Finished(uint64_t sequence, std::vector<Drawn> steps) const {
    steps.push_back(Eos());
    return Ran(sequence, steps, arbor::v1::STOP_REASON_STOP_TOKEN);
  }
  // `steps`, then a BRANCH stop at the leaf they end on, from `probs`.
  RunResult Branched(uint64_t sequence, const std::vector<Drawn>& steps, const Probs& probs) const {
    RunResult result = Ran(sequence, steps, arbor::v1::STOP_REASON_STRUCTURAL);
    *result.add_steps() = BranchStep(result.length(), probs);
    return result;
  }

  BranchStrategy::Next Answer(std::vector<RunResult> results) {
    RunResponse response;
    for (RunResult& result : results) *response.add_results() = std::move(result);
    return host_->Answer(*search_, response);
  }

  // The rollouts' sequences in the order they were forked.
  static uint64_t Seq(int i) { return kFirstRolloutSequence + i; }
  // The note the judging left on candidate `i` of fork `fork`.
  std::string Note(int fork, int i) const {
    return std::string(host_->tree().branch_note(host_->forks()[fork].candidates[i]));
  }

  static float LogprobOf(const Drawn& drawn) {
    for (const auto& [token, p] : drawn.probs) {
      if (token == drawn.token) return static_cast<float>(std::log(p));
    }
    return 0.0f;
  }

  std::unique_ptr<FakeBranchHost> host_;
  std::unique_ptr<TracePlanner> planner_;
  ForkPlan plan_;
  std::vector<Rollout> rollouts_;
  std::unique_ptr<BranchStrategy> search_;
};

// --- CoT-decoding ---------------------------------------------------------------------------

class CotDecodingTest : public TraceSearchTest {
 protected:
  // The first token forks into 4, 5, 6; the traces answer "7" (margin 0.4), "8" (0.8) and "7"
  // (0.5) at their second token (pattern: the second digit). Traces 4 and 5 finish in the first
  // Run; trace 6 is cut after its answer (MAX_STEPS) and finishes alone in a second Run, which
  // nothing may be judged before.
  void RunToCommit(bool aggregate, BranchCommit& commit, int32_t commit_rank = 0) {
    BranchStrategy::Next next = std::optional<BranchCommit>();
    ASSERT_NO_FATAL_FAILURE(RunEveryTrace(aggregate, commit_rank, next));
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_TRUE(next->has_value()) << "every trace has finished";
    commit = **next;
    EXPECT_THAT(commit.scores,
                ElementsAre(FloatNear(0.4f, 1e-5f), FloatNear(0.8f, 1e-5f), FloatNear(0.5f, 1e-5f)))
        << "each candidate's trace's margin";
    EXPECT_EQ(Note(0, 0), "answer «7» · margin 0.400");
    EXPECT_EQ(Note(0, 1), "answer «8» · margin 0.800");
    EXPECT_EQ(Note(0, 2), "answer «7» · margin 0.500");
    EXPECT_EQ(commit.stop, arbor::v1::STOP_REASON_STOP_TOKEN);
  }

  // The traces' Runs up to the last trace's end; `next` is what the search then said.
  void RunEveryTrace(bool aggregate, int32_t commit_rank, BranchStrategy::Next& next) {
    JobSpec spec = TraceSpec();
    spec.policy.trace.width = 3;
    spec.policy.trace.aggregate = aggregate;
    spec.policy.trace.commit_rank = commit_rank;
    ASSERT_NO_FATAL_FAILURE(Make(std::move(spec), R"(\d(\d))"));
    ASSERT_NO_FATAL_FAILURE(Open({{4, 0.5}, {5, 0.3}, {6, 0.2}}));
    EXPECT_EQ(plan_.width, 3);
    EXPECT_EQ(plan_.max_len, kMaxTokens) << "a trace is the rest of the answer";

    ASSERT_NO_FATAL_FAILURE(SendRun());
    const arbor::v1::RunRequest& request = host_->last_request();
    ASSERT_EQ(request.items_size(), 3) << "every trace in ONE batched Run";
    for (int i = 0; i < 3; ++i) {
      const RunItem& item = request.items(i);
      EXPECT_EQ(item.sequence_id(), Seq(i));
      EXPECT_EQ(item.fork_from(), kMainSequence);
      EXPECT_EQ(item.fork_length(), kPrompt) << "forked at the first generated token";
      EXPECT_THAT(item.append(), ElementsAre(4 + i)) << "the most likely tokens, in order";
      EXPECT_EQ(item.max_steps(), kMaxTokens - 1) << "to its stop token or the job's end";
      EXPECT_FALSE(item.stop_when_calm()) << "a trace runs to its end";
      EXPECT_FALSE(item.stop_on_structural()) << "trace.max_depth 1: no nested fork";
      EXPECT_EQ(item.stop_below_confidence(), 0.0f);
    }

    next =
        Answer({Finished(Seq(0), {Margin(7, 0.6, 0.2)}), Finished(Seq(1), {Margin(8, 0.85, 0.05)}),
                Ran(Seq(2), {Margin(7, 0.7, 0.2)}, arbor::v1::STOP_REASON_MAX_STEPS)});
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_FALSE(next->has_value()) << "trace 6 has not finished";
    EXPECT_THAT(host_->resolved(), IsEmpty());
    EXPECT_EQ(Note(0, 0), "") << "no trace is judged before every trace has finished";

    ASSERT_NO_FATAL_FAILURE(SendRun());
    ASSERT_EQ(host_->last_request().items_size(), 1) << "only the unfinished trace runs on";
    EXPECT_EQ(host_->last_request().items(0).sequence_id(), Seq(2));
    EXPECT_TRUE(host_->last_request().items(0).continues());
    next = Answer({Finished(Seq(2), {})});
  }
};

// "7" sums 0.4 + 0.5 = 0.9 against "8"'s 0.8; of the "7" traces the more confident, the third,
// is committed.
TEST_F(CotDecodingTest, WithAggregateTheBestSupportedAnswerWins) {
  BranchCommit commit;
  ASSERT_NO_FATAL_FAILURE(RunToCommit(/*aggregate=*/true, commit));
  EXPECT_EQ(commit.main_sequence, Seq(2));
  EXPECT_THAT(commit.reason, HasSubstr("answer «7» from 2 of 3 traces, summed margin 0.900"));
  EXPECT_THAT(commit.reason, HasSubstr("(next: «8», 0.800)"));
  absl::StatusOr<BranchResolution> resolution = host_->CommitBranch(*search_, commit);
  ASSERT_TRUE(resolution.ok()) << resolution.status();
  EXPECT_EQ(resolution->winner_candidate, rollouts_[2].candidate);
  EXPECT_THAT(host_->tree().CommittedTokenIds(), ElementsAre(6, 7, kHostEos));
  EXPECT_THAT(host_->released(), ElementsAre(Seq(0), Seq(1), kMainSequence));
  EXPECT_TRUE(host_->tree().CheckInvariants().ok());
}

TEST_F(CotDecodingTest, WithoutAggregateTheMostConfidentTraceWins) {
  BranchCommit commit;
  ASSERT_NO_FATAL_FAILURE(RunToCommit(/*aggregate=*/false, commit));
  EXPECT_EQ(commit.main_sequence, Seq(1));
  EXPECT_EQ(host_->tree().node(commit.winner_leaf).token_id, kHostEos);
  EXPECT_EQ(host_->tree().node(commit.winner_leaf).sequence_id, Seq(1));
  EXPECT_THAT(commit.reason, HasSubstr("answer «8», margin 0.800"));
  absl::StatusOr<BranchResolution> resolution = host_->CommitBranch(*search_, commit);
  ASSERT_TRUE(resolution.ok()) << resolution.status();
  EXPECT_THAT(host_->tree().CommittedTokenIds(), ElementsAre(5, 8, kHostEos));
}

// Ranked "7" (trace 6, 0.5), "7" (trace 4, 0.4), "8" (trace 5): commit_rank r commits the trace
// ranked r + 1, under the same notes, so jobs that differ only in it answer with distinct traces.
TEST_F(CotDecodingTest, CommitRankCommitsTheTraceRankedBelow) {
  BranchCommit commit;
  ASSERT_NO_FATAL_FAILURE(RunToCommit(/*aggregate=*/true, commit, /*commit_rank=*/1));
  EXPECT_EQ(commit.main_sequence, Seq(0));
  EXPECT_THAT(commit.reason, HasSubstr("trace.commit_rank 1: the trace ranked 2 of 3, "
                                      "answer «7» · margin 0.400"));
  absl::StatusOr<BranchResolution> resolution = host_->CommitBranch(*search_, commit);
  ASSERT_TRUE(resolution.ok()) << resolution.status();
  EXPECT_THAT(host_->tree().CommittedTokenIds(), ElementsAre(4, 7, kHostEos));

  ASSERT_NO_FATAL_FAILURE(RunToCommit(/*aggregate=*/true, commit, /*commit_rank=*/2));
  EXPECT_EQ(commit.main_sequence, Seq(1));
}

TEST_F(CotDecodingTest, CommitRankBeyondTheTracesFailsTheJob) {
  BranchStrategy::Next next = std::optional<BranchCommit>();
  ASSERT_NO_FATAL_FAILURE(RunEveryTrace(/*aggregate=*/true, /*commit_rank=*/3, next));
  EXPECT_EQ(next.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(next.status().message(), HasSubstr("opened only 3 distinct traces"));
}

// Traces 4 and 6 match nothing but are sure of every token (whole-trace margins 0.585, 0.525);
// trace 5's "7" (0.3) still wins, under either rule, and the two without an answer rank by their
// own margin below it.
TEST_F(TraceSearchTest, TracesWithoutAnAnswerRankBelowTracesWithOne) {
  for (const bool aggregate : {true, false}) {
    SCOPED_TRACE(aggregate);
    JobSpec spec = TraceSpec();
    spec.policy.trace.aggregate = aggregate;
    ASSERT_NO_FATAL_FAILURE(Make(std::move(spec), R"(\d(\d))"));
    ASSERT_NO_FATAL_FAILURE(Open({{4, 0.5}, {5, 0.3}, {6, 0.2}}));  // The candidates' margin 0.2.
    ASSERT_NO_FATAL_FAILURE(SendRun());
    BranchStrategy::Next next = Answer({Finished(Seq(0), {Margin(10, 0.98, 0.01)}),   // "4:"
                                        Finished(Seq(1), {Margin(7, 0.6, 0.3)}),      // "57"
                                        Finished(Seq(2), {Margin(11, 0.9, 0.05)})});  // "6;"
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_TRUE(next->has_value());
    EXPECT_EQ((*next)->main_sequence, Seq(1));
    EXPECT_THAT((*next)->reason, ::testing::StartsWith("answer «7»"));
    EXPECT_THAT((*next)->scores, ElementsAre(FloatNear(0.585f, 1e-5f), FloatNear(0.3f, 1e-5f),
                                             FloatNear(0.525f, 1e-5f)));
    EXPECT_EQ(Note(0, 0), "no answer · margin 0.585");
    EXPECT_EQ(Note(0, 1), "answer «7» · margin 0.300");
    EXPECT_EQ(Note(0, 2), "no answer · margin 0.525");
  }
}

// The outrank stop (whole traces answer, candidates' margin 0.2, 10 tokens at most): Runs of
// kOutrankChunk tokens. After the first, trace 4 has finished at (0.2 + 0.89) / 2 = 0.545;
// trace 5 (margins 0.1) can reach (0.2 + 7 · 0.1 + 2) / 10 = 0.29 at best and stops; trace 6
// can reach (0.2 + 7 · 0.89 + 2) / 10 = 0.843, runs on and wins at (0.2 + 8 · 0.89) / 9 =
// 0.813, as it would without the stop.
TEST_F(TraceSearchTest, ATraceThatCannotOvertakeAFinishedOneStops) {
  constexpr arbor::v1::StopReason kMaxSteps = arbor::v1::STOP_REASON_MAX_STEPS;
  ASSERT_NO_FATAL_FAILURE(Make(TraceSpec(), ""));
  ASSERT_NO_FATAL_FAILURE(Open({{4, 0.5}, {5, 0.3}, {6, 0.2}}));
  ASSERT_NO_FATAL_FAILURE(SendRun());
  for (const RunItem& item : host_->last_request().items()) {
    EXPECT_EQ(item.max_steps(), TraceSearch::kOutrankChunk - 1) << "to the first check";
  }
  BranchStrategy::Next next =
      Answer({Finished(Seq(0), {Confident(7)}),
              Ran(Seq(1), std::vector<Drawn>(7, Margin(8, 0.5, 0.4)), kMaxSteps),
              Ran(Seq(2), std::vector<Drawn>(7, Confident(9)), kMaxSteps)});
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_FALSE(next->has_value()) << "trace 6 may still win";
  ASSERT_NO_FATAL_FAILURE(SendRun());
  ASSERT_EQ(host_->last_request().items_size(), 1) << "trace 5 stopped";
  EXPECT_EQ(host_->last_request().items(0).sequence_id(), Seq(2));
  EXPECT_EQ(host_->last_request().items(0).max_steps(), 2) << "what its budget leaves";
  next = Answer({Finished(Seq(2), {Confident(9)})});
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ((*next)->main_sequence, Seq(2));
  EXPECT_THAT((*next)->scores, ElementsAre(FloatNear(0.545f, 1e-4f), FloatNear(0.1125f, 1e-4f),
                                           FloatNear(0.8133f, 1e-4f)));
  EXPECT_THAT((*next)->reason, HasSubstr("1 traces left out of the vote"));
  EXPECT_THAT(Note(0, 1), EndsWith("cut off · stopped: could not overtake a finished trace"));
}

// --- the trace and token budgets ------------------------------------------------------------

TEST_F(TraceSearchTest, MaxTracesCapsTheFork) {
  for (const auto& [max_traces, width] : std::vector<std::pair<int32_t, int>>{{2, 2}, {16, 4}}) {
    SCOPED_TRACE(max_traces);
    JobSpec spec = TraceSpec();
    spec.policy.trace.width = 4;
    spec.policy.trace.max_traces = max_traces;
    ASSERT_NO_FATAL_FAILURE(Make(std::move(spec), ""));
    ASSERT_NO_FATAL_FAILURE(Open({{4, 0.4}, {5, 0.3}, {6, 0.2}, {7, 0.1}}));
    EXPECT_EQ(plan_.width, width);
    ASSERT_EQ(host_->forks().size(), 1u);
    EXPECT_EQ(host_->forks()[0].candidates.size(), static_cast<size_t>(width));
    ASSERT_NO_FATAL_FAILURE(SendRun());
    EXPECT_EQ(host_->last_request().items_size(), width);
  }
}

// max_traces 3 with forks of 2 (nesting allowed to depth 3): the outer fork's two traces both
// stop on a BRANCH; the first forks into two (3 traces: the room is spent), the second finds no
// room and takes the fallback step, and no trace may branch any more.
TEST_F(TraceSearchTest, ANestedForkTakesOnlyTheRoomLeft) {
  JobSpec spec = TraceSpec();
  spec.policy.trace.width = 2;
  spec.policy.trace.max_depth = 3;
  spec.policy.trace.max_traces = 3;
  ASSERT_NO_FATAL_FAILURE(Make(std::move(spec), ""));
  ASSERT_NO_FATAL_FAILURE(Open({{4, 0.6}, {5, 0.4}}));
  ASSERT_NO_FATAL_FAILURE(SendRun());
  for (const RunItem& item : host_->last_request().items()) {
    EXPECT_TRUE(item.stop_on_structural()) << "2 of 3 traces: a fork of 2 still fits";
  }
  BranchStrategy::Next next =
      Answer({Branched(Seq(0), {Margin(10, 0.9, 0.1)}, {{6, 0.55}, {7, 0.45}}),
              Branched(Seq(1), {Margin(11, 0.9, 0.1)}, {{8, 0.55}, {9, 0.45}})});
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_FALSE(next->has_value());
  ASSERT_EQ(host_->forks().size(), 2u) << "only trace 4 forked";
  EXPECT_EQ(host_->forks()[1].width, 2);
  EXPECT_EQ(host_->forks()[1].base.fork_from, Seq(0));

  ASSERT_NO_FATAL_FAILURE(SendRun());
  const arbor::v1::RunRequest& request = host_->last_request();
  ASSERT_EQ(request.items_size(), 3);
  EXPECT_EQ(request.items(0).sequence_id(), Seq(2));
  EXPECT_EQ(request.items(1).sequence_id(), Seq(3));
  EXPECT_EQ(request.items(2).sequence_id(), Seq(1));
  EXPECT_EQ(request.items(2).max_steps(), 1) << "trace 5 takes the fallback step";
  for (const RunItem& item : request.items()) {
    EXPECT_FALSE(item.stop_on_structural()) << "3 of 3 traces: no room for another fork";
  }
}

// After one main-path token, the fork's two candidates make 3 tokens spent: a budget of 1 is
// spent before the fork opens (it was not before that token), one of 3 leaves the traces unable
// to fork again, one of 4 lets them.
TEST_F(TraceSearchTest, TheTokenBudgetStopsForksOnceSpent) {
  struct Case {
    int32_t budget;
    int width;
    bool may_branch;
  };
  for (const Case& c : {Case{0, 2, true}, Case{1, 0, false}, Case{3, 2, false}, Case{4, 2, true}}) {
    SCOPED_TRACE(c.budget);
    JobSpec spec = TraceSpec();
    spec.policy.trace.width = 2;
    spec.policy.trace.max_depth = 2;
    spec.policy.trace.token_budget = c.budget;
    ASSERT_NO_FATAL_FAILURE(Make(std::move(spec), ""));
    EXPECT_EQ(planner_->Plan(host_->Remaining()).width, 2) << "nothing spent yet";
    ASSERT_NO_FATAL_FAILURE(MainStep(Margin(11, 0.9, 0.1)));
    const ForkPlan plan = planner_->Plan(host_->Remaining());
    EXPECT_EQ(plan.width, c.width);
    EXPECT_EQ(plan.max_len, kMaxTokens - 1);
    if (c.width == 0) continue;
    ASSERT_NO_FATAL_FAILURE(Open({{4, 0.6}, {5, 0.4}}));
    ASSERT_NO_FATAL_FAILURE(SendRun());
    ASSERT_EQ(host_->last_request().items_size(), 2);
    for (const RunItem& item : host_->last_request().items()) {
      EXPECT_EQ(item.fork_length(), kPrompt + 1) << "below the committed token";
      EXPECT_EQ(item.stop_on_structural(), c.may_branch);
    }
  }
}

// --- nesting ----------------------------------------------------------------------------------

// Forks of 2 nested to depth 2, answer: the last digit. Trace 4 forks after ':' into 6 and 7,
// which answer "9" (margin 0.6) and "8" (0.4); trace 5 answers "8" (0.3) but runs on after the
// nested traces have finished. Only then are the traces judged: "8" sums 0.7 across both
// branches, so the nested branch resolves towards trace 7 though trace 6 is the more confident,
// and the outer branch commits the trace 4 that holds it.
TEST_F(TraceSearchTest, ANestedBranchWaitsForEveryTraceAndResolvesTowardsTheWinner) {
  JobSpec spec = TraceSpec();
  spec.policy.trace.width = 2;
  spec.policy.trace.max_depth = 2;
  ASSERT_NO_FATAL_FAILURE(Make(std::move(spec), R"((\d)$)"));
  ASSERT_NO_FATAL_FAILURE(Open({{4, 0.6}, {5, 0.4}}));
  ASSERT_NO_FATAL_FAILURE(SendRun());
  BranchStrategy::Next next =
      Answer({Branched(Seq(0), {Margin(10, 0.9, 0.1)}, {{6, 0.55}, {7, 0.45}}),
              Ran(Seq(1), {Margin(12, 0.9, 0.1)}, arbor::v1::STOP_REASON_MAX_STEPS)});
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_FALSE(next->has_value());
  ASSERT_EQ(host_->forks().size(), 2u);
  EXPECT_EQ(host_->forks()[1].max_len, kMaxTokens - 2) << "what trace 4's budget has left";

  ASSERT_NO_FATAL_FAILURE(SendRun());
  ASSERT_EQ(host_->last_request().items_size(), 3) << "nested traces 6, 7 and trace 5";
  next = Answer({Finished(Seq(2), {Margin(9, 0.8, 0.2)}), Finished(Seq(3), {Margin(8, 0.7, 0.3)}),
                 Ran(Seq(1), {Margin(8, 0.65, 0.35)}, arbor::v1::STOP_REASON_MAX_STEPS)});
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_FALSE(next->has_value());
  EXPECT_THAT(host_->resolved(), IsEmpty()) << "the nested branch waits for trace 5";
  EXPECT_THAT(host_->release_calls(), IsEmpty());

  ASSERT_NO_FATAL_FAILURE(SendRun());
  ASSERT_EQ(host_->last_request().items_size(), 1);
  next = Answer({Finished(Seq(1), {})});
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE(next->has_value());

  ASSERT_EQ(host_->resolved().size(), 1u) << "the nested branch, towards trace 7";
  const FakeBranchHost::Resolved& nested = host_->resolved()[0];
  EXPECT_EQ(nested.resolution.winner_candidate, host_->forks()[1].candidates[1]);
  EXPECT_EQ(nested.reason, "holds the trace ranked 1");
  EXPECT_THAT(nested.scores, ElementsAre(FloatNear(0.6f, 1e-5f), FloatNear(0.4f, 1e-5f)));
  EXPECT_THAT(host_->release_calls(), ElementsAre(ElementsAre(Seq(0), Seq(2))));
  EXPECT_EQ(Note(1, 0), "answer «9» · margin 0.600");
  EXPECT_EQ(Note(1, 1), "answer «8» · margin 0.400");
  EXPECT_EQ(Note(0, 1), "answer «8» · margin 0.300");

  const BranchCommit& commit = **next;
  EXPECT_EQ(commit.main_sequence, Seq(3));
  EXPECT_THAT(commit.reason, HasSubstr("answer «8» from 2 of 3 traces, summed margin 0.700"));
  EXPECT_THAT(commit.scores, ElementsAre(FloatNear(0.4f, 1e-5f), FloatNear(0.3f, 1e-5f)));
  absl::StatusOr<BranchResolution> resolution = host_->CommitBranch(*search_, commit);
  ASSERT_TRUE(resolution.ok()) << resolution.status();
  EXPECT_THAT(host_->tree().CommittedTokenIds(), ElementsAre(4, 10, 7, 8, kHostEos));
  EXPECT_TRUE(host_->tree().CheckInvariants().ok());
}

// --- DeepConf's warm-up -----------------------------------------------------------------------

// One main-path token (confidence t), then a fork of 4 (each candidate's confidence f). Traces 4
// and 5 warm up: 4 draws a doubtful then a confident token, 5 a confident one but only in a
// second Run. Their lowest group confidences over 3 tokens, (t + f + d)/3 and (t + f + c)/3, set
// the threshold at their 25% quantile (keep_fraction 0.75); the held traces 6 and 7 run only
// then, with it, and with the trunk's and the fork's confidences as their window's start.
TEST_F(TraceSearchTest, DeepConfHoldsTracesUntilTheWarmupSetsTheirThreshold) {
  JobSpec spec = TraceSpec();
  spec.policy.trace.width = 4;
  spec.policy.trace.warmup_traces = 2;
  spec.policy.trace.confidence_window = 3;
  spec.policy.trace.keep_fraction = 0.75f;
  ASSERT_NO_FATAL_FAILURE(Make(std::move(spec), R"((\d)$)"));
  const Drawn trunk = {11, {{11, 0.5}, {12, 0.5}}};
  const Probs fork = {{4, 0.4}, {5, 0.3}, {6, 0.2}, {7, 0.1}};
  ASSERT_NO_FATAL_FAILURE(MainStep(trunk));
  ASSERT_NO_FATAL_FAILURE(Open(fork));

  ASSERT_NO_FATAL_FAILURE(SendRun());
  ASSERT_EQ(host_->last_request().items_size(), 2) << "the warm-up runs first";
  for (int i = 0; i < 2; ++i) {
    const RunItem& item = host_->last_request().items(i);
    EXPECT_EQ(item.sequence_id(), Seq(i));
    EXPECT_EQ(item.stop_below_confidence(), 0.0f) << "the warm-up runs whole";
    EXPECT_THAT(item.recent_confidences(), IsEmpty());
  }
  BranchStrategy::Next next =
      Answer({Finished(Seq(0), {Doubtful(9), Confident(8)}),
              Ran(Seq(1), {Confident(8)}, arbor::v1::STOP_REASON_MAX_STEPS)});
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_FALSE(next->has_value());

  ASSERT_NO_FATAL_FAILURE(SendRun());
  ASSERT_EQ(host_->last_request().items_size(), 1) << "held until every warm-up trace is done";
  EXPECT_EQ(host_->last_request().items(0).sequence_id(), Seq(1));
  EXPECT_EQ(host_->last_request().items(0).stop_below_confidence(), 0.0f);
  next = Answer({Finished(Seq(1), {})});
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_FALSE(next->has_value()) << "the held traces have yet to run";

  ASSERT_NO_FATAL_FAILURE(SendRun());
  const double t = ConfidenceOf(trunk.probs);
  const double f = ConfidenceOf(fork);
  const double d = ConfidenceOf(Doubtful(9).probs);
  const double c = ConfidenceOf(Confident(8).probs);
  const double low = (t + f + d) / 3;   // Trace 4's lower window of two.
  const double high = (t + f + c) / 3;  // Trace 5's only window.
  const double threshold = low + 0.25 * (high - low);
  const arbor::v1::RunRequest& held = host_->last_request();
  ASSERT_EQ(held.items_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const RunItem& item = held.items(i);
    EXPECT_EQ(item.sequence_id(), Seq(2 + i));
    EXPECT_EQ(item.fork_from(), kMainSequence);
    EXPECT_THAT(item.append(), ElementsAre(6 + i));
    EXPECT_NEAR(item.stop_below_confidence(), threshold, 1e-4);
    EXPECT_EQ(item.confidence_window(), 3);
    EXPECT_THAT(item.recent_confidences(), ElementsAre(FloatNear(t, 1e-4), FloatNear(f, 1e-4)))
        << "the window spans the trunk and the fork's token";
  }

  next = Answer({Ran(Seq(2), {Doubtful(9)}, arbor::v1::STOP_REASON_LOW_CONFIDENCE),
                 Finished(Seq(3), {Confident(8)})});
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE(next->has_value());
  EXPECT_THAT(Note(0, 2), EndsWith("· cut off · stopped: confidence fell"));
  EXPECT_THAT((*next)->reason, HasSubstr("1 traces left out of the vote"));
}

}  // namespace
}  // namespace arbor::coordinator
