// The job driver's TRACE mode against a worker scripted by metrics (scripted_worker.h), on
// hand-built trees whose margins are known: CoT-decoding forks the first token and commits the
// trace the rule picks (summed per answer, or alone), EAGer forks only above its entropy gate and
// within its trace and token budgets, DeepConf holds its traces beyond the warm-up, stops the
// doubtful ones at the threshold the warm-up sets and lets the confident half vote, the traces'
// text streams before the answer, and a TRACE job is the same tree for the same seed.
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/job/job.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/job/job_harness.h"

namespace arbor::coordinator {
namespace {

using testing::BaseSpec;
using testing::ExpectCleanFinish;
using testing::Harness;
using testing::kEos;
using testing::Lelv;
using testing::RunToTree;
using testing::Script;
using testing::ScriptedStep;
using testing::ScriptInput;

// Steps keyed by the generated tokens before them (prompt {1, 2, 3} excluded); unlisted
// continuations end with the eos token.
Script ByGenerated(std::map<std::vector<int32_t>, ScriptedStep> steps) {
  return [steps](const ScriptInput& in) {
    const std::vector<int32_t> generated(in.tokens.begin() + 3, in.tokens.end());
    const auto it = steps.find(generated);
    return it != steps.end() ? it->second : Lelv({{kEos, 1.0}});
  };
}

ScriptedStep Uncertain(std::vector<std::pair<int32_t, double>> distribution) {
  ScriptedStep step = Lelv(std::move(distribution));
  step.entropy = 4.0f;
  return step;
}

// CoT: the first token forks into 4, 5, 6 (any metrics); the traces answer "7" (margin 0.5),
// "8" (margin 0.8) and "7" (margin 0.5) at their second token, then stop.
Script CotScript() {
  return ByGenerated({
      {{}, Lelv({{4, 0.5}, {5, 0.3}, {6, 0.2}})},
      {{4}, Lelv({{7, 0.75}, {9, 0.25}})},
      {{5}, Lelv({{8, 0.9}, {9, 0.1}})},
      {{6}, Lelv({{7, 0.75}, {9, 0.25}})},
  });
}

JobSpec CotSpec(bool aggregate) {
  JobSpec spec = BaseSpec(10);
  spec.policy.mode = entropix::PolicyMode::kTrace;
  spec.policy.trace.width = 3;
  spec.policy.trace.aggregate = aggregate;
  spec.policy.trace.answer_pattern = R"(\d(\d))";  // The second digit answers.
  return spec;
}

TEST(JobTraceTest, CotDecodingForksTheFirstTokenAndSumsMarginsPerAnswer) {
  Harness h(CotScript());
  auto job = h.Make(CotSpec(/*aggregate=*/true));
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_EQ(job->finish_reason(), arbor::v1::FINISH_REASON_STOP_TOKEN);
  // "7" sums 0.5 + 0.5 = 1.0 against "8"'s 0.8: the first "7" trace answers.
  EXPECT_EQ(job->text(), "47");
  const auto requests = h.worker->requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_TRUE(requests[0].items(0).stop_on_structural());
  EXPECT_TRUE(requests[0].items(0).top_k_every_step()) << "margins need every step's top-K";
  EXPECT_EQ(requests.size(), 2u) << "the main path up to the fork, then the traces";
  const arbor::v1::RunRequest& rollout = requests[1];
  ASSERT_EQ(rollout.items_size(), 3) << "every trace in one batched Run";
  EXPECT_EQ(rollout.job_id(), requests[0].job_id()) << "the worker shares steps by job";
  std::vector<int32_t> candidates;
  for (const arbor::v1::RunItem& item : rollout.items()) {
    candidates.push_back(item.append(0));
    EXPECT_EQ(item.fork_from(), requests[0].items(0).sequence_id());
    EXPECT_EQ(item.fork_length(), 3) << "the prompt's KV shared, not prefilled again";
    EXPECT_FALSE(item.stop_when_calm()) << "a trace runs to its end";
    EXPECT_EQ(item.max_steps(), 9);
  }
  EXPECT_THAT(candidates, ::testing::ElementsAre(4, 5, 6)) << "the most likely, in order";
  const auto resolved = h.Of(arbor::v1::GenerateEvent::kBranchResolved);
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_THAT(resolved[0].branch_resolved().reason(),
              ::testing::HasSubstr("answer «7» from 2 of 3 traces, summed margin 1.000"));
  EXPECT_THAT(resolved[0].branch_resolved().scores(),
              ::testing::ElementsAre(::testing::FloatNear(0.5f, 1e-5f),
                                     ::testing::FloatNear(0.8f, 1e-5f),
                                     ::testing::FloatNear(0.5f, 1e-5f)));
  job->ReadTree([](const SearchTree& tree) {
    EXPECT_EQ(tree.branch_note(1), "answer «7» · margin 0.500");
    EXPECT_EQ(tree.branch_note(2), "answer «8» · margin 0.800");
  });
  ExpectCleanFinish(*job, *h.worker);
}

// BRANCH's own mode does not reach TRACE: with branch.mode BEAM the traces still run to their
// ends and the most confident answer wins.
TEST(JobTraceTest, BranchModeBeamLeavesTraceAlone) {
  Harness h(CotScript());
  JobSpec spec = CotSpec(/*aggregate=*/true);
  spec.policy.branch.mode = entropix::BranchMode::kBeam;
  auto job = h.Make(spec);
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_EQ(job->text(), "47");
  const auto requests = h.worker->requests();
  ASSERT_GE(requests.size(), 2u);
  ASSERT_EQ(requests[1].items_size(), 3);
  EXPECT_GT(requests[1].items(0).max_steps(), 1) << "a trace, not a one-step beam";
}

TEST(JobTraceTest, WithoutAggregationTheMostConfidentTraceAnswers) {
  Harness h(CotScript());
  auto job = h.Make(CotSpec(/*aggregate=*/false));
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_EQ(job->text(), "58");
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTraceTest, MaxTracesBoundsTheFork) {
  Harness h(CotScript());
  JobSpec spec = CotSpec(true);
  spec.policy.trace.max_traces = 2;
  auto job = h.Make(std::move(spec));
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_EQ(h.worker->requests()[1].items_size(), 2);
  EXPECT_EQ(job->text(), "58") << "4 and 5 only: \"8\" (0.8) beats \"7\" (0.5)";
}

// EAGer: greedy "10", then an uncertain step forks 20/21; under 20 another uncertain step forks
// 30/31 (nested), and under 21 the same step 32/33, if the budgets leave room.
Script EagerScript() {
  return ByGenerated({
      {{}, Lelv({{10, 0.9}, {11, 0.1}})},
      {{10}, Uncertain({{20, 0.6}, {21, 0.4}})},
      {{10, 20}, Uncertain({{30, 0.5}, {31, 0.5}})},
      {{10, 21}, Uncertain({{32, 0.55}, {33, 0.45}})},
      {{10, 20, 30}, Lelv({{5, 0.6}, {6, 0.4}})},
      {{10, 20, 31}, Lelv({{5, 0.95}, {6, 0.05}})},
      {{10, 21, 32}, Lelv({{6, 0.9}, {5, 0.1}})},
  });
}

JobSpec EagerSpec(int32_t max_traces, int32_t token_budget) {
  JobSpec spec = BaseSpec(10);
  spec.policy.mode = entropix::PolicyMode::kTrace;
  spec.policy.trace.width = 2;
  spec.policy.trace.max_depth = 2;
  spec.policy.trace.fork_first = false;
  spec.policy.trace.fork_entropy = 3.0f;
  spec.policy.trace.max_traces = max_traces;
  spec.policy.trace.token_budget = token_budget;
  spec.policy.trace.answer_pattern = R"((\d)$)";
  return spec;
}

// Under 21 the nested fork finds the budget of 3 traces spent and stays greedy.
TEST(JobTraceTest, EagerForksAboveTheGateWithinTheTraceBudget) {
  Harness h(EagerScript());
  JobSpec spec = EagerSpec(/*max_traces=*/3, /*token_budget=*/0);
  auto job = h.Make(std::move(spec));
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  // Traces: ":D N 5" (0.2), ":D O 5" (0.9), ":E P 6" (0.8); "5" sums 1.1 against "6"'s 0.8.
  EXPECT_EQ(job->text(), ":DO5");
  const auto opened = h.Of(arbor::v1::GenerateEvent::kBranchOpened);
  ASSERT_EQ(opened.size(), 2u) << "the outer fork and one nested fork; then the budget is spent";
  const auto resolved = h.Of(arbor::v1::GenerateEvent::kBranchResolved);
  ASSERT_EQ(resolved.size(), 2u);
  EXPECT_THAT(resolved[0].branch_resolved().reason(), ::testing::HasSubstr("ranked 1"));
  EXPECT_THAT(resolved[1].branch_resolved().reason(),
              ::testing::HasSubstr("answer «5» from 2 of 3 traces"));
  ExpectCleanFinish(*job, *h.worker);
}

// The token budget (room for 16 traces): the fork under 20 sees 3 tokens spent ("10", "20",
// "21") and opens under a budget of 4, the one under 21 sees 5 and stays greedy, which is the
// tree of a 3-trace budget; a budget of 3 opens no nested fork, and one of 1 not even the first
// ("10" is spent).
TEST(JobTraceTest, EagerForksOnlyWhileTheTokenBudgetLasts) {
  for (const auto& [budget, forks] :
       std::vector<std::pair<int32_t, size_t>>{{4, 2}, {3, 1}, {1, 0}}) {
    SCOPED_TRACE(budget);
    Harness h(EagerScript());
    auto job = h.Make(EagerSpec(/*max_traces=*/16, budget));
    job->Start();
    ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
    EXPECT_EQ(h.Of(arbor::v1::GenerateEvent::kBranchOpened).size(), forks);
    if (budget == 4) {
      EXPECT_EQ(job->text(), ":DO5");
    }
    ExpectCleanFinish(*job, *h.worker);
  }
}

// A step whose top-K is `token` at 0.9 and ten fillers at 0.01: token confidence
// −(ln 0.9 + 10 ln 0.01)/11 ≈ 4.196.
ScriptedStep Confident(int32_t token) {
  std::vector<std::pair<int32_t, double>> d = {{token, 0.9}};
  for (int32_t filler = 50; filler < 60; ++filler) d.emplace_back(filler, 0.01);
  return Lelv(d);
}

// A step torn between `token` (0.55) and 60 (0.45): confidence ≈ 0.698.
ScriptedStep Doubtful(int32_t token) { return Lelv({{token, 0.55}, {60, 0.45}}); }

// DeepConf's mechanics on greedy traces (temperature 0, so the tree is known): the fork's 4
// candidates (confidence ≈ 1.508 each) start traces 4 and 5 as the warm-up; their lowest group
// confidences over 2 tokens, (1.508 + 4.196)/2 ≈ 2.852 and (1.508 + 0.698)/2 ≈ 1.103, set the
// threshold at their median ≈ 1.978. Then 6 stops after its doubtful token, 7 finishes; the more
// confident half of the finished traces (4 and 7) vote "8".
TEST(JobTraceTest, DeepConfWarmsUpStopsTheDoubtfulAndVotesWithTheConfident) {
  Harness h(ByGenerated({
      {{}, Lelv({{4, 0.4}, {5, 0.3}, {6, 0.2}, {7, 0.1}})},
      {{4}, Confident(8)},
      {{5}, Doubtful(9)},
      {{6}, Doubtful(10)},
      {{6, 10}, Confident(8)},
      {{7}, Confident(8)},
  }));
  JobSpec spec = BaseSpec(10);
  spec.policy.mode = entropix::PolicyMode::kTrace;
  spec.policy.trace.width = 4;
  spec.policy.trace.warmup_traces = 2;
  spec.policy.trace.confidence_window = 2;
  spec.policy.trace.keep_fraction = 0.5f;
  spec.policy.trace.vote = entropix::TraceVote::kGroupConfidence;
  spec.policy.trace.answer_pattern = R"((\d)$)";
  auto job = h.Make(std::move(spec));
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_EQ(job->text(), "48");
  const auto requests = h.worker->requests();
  ASSERT_EQ(requests.size(), 3u) << "main, warm-up, the rest";
  ASSERT_EQ(requests[1].items_size(), 2);
  EXPECT_EQ(requests[1].items(0).append(0), 4);
  EXPECT_EQ(requests[1].items(1).append(0), 5);
  EXPECT_EQ(requests[1].items(0).stop_below_confidence(), 0.0f) << "the warm-up runs whole";
  ASSERT_EQ(requests[2].items_size(), 2);
  const double fork = -(std::log(0.4) + std::log(0.3) + std::log(0.2) + std::log(0.1)) / 4;
  const double confident = -(std::log(0.9) + 10 * std::log(0.01)) / 11;
  const double doubtful = -(std::log(0.55) + std::log(0.45)) / 2;
  const double threshold = ((fork + confident) / 2 + (fork + doubtful) / 2) / 2;
  for (const arbor::v1::RunItem& item : requests[2].items()) {
    EXPECT_NEAR(item.stop_below_confidence(), threshold, 1e-4);
    EXPECT_EQ(item.confidence_window(), 2);
    EXPECT_THAT(item.recent_confidences(), ::testing::ElementsAre(::testing::FloatNear(fork, 1e-4)))
        << "the window spans the fork's token";
  }
  const auto resolved = h.Of(arbor::v1::GenerateEvent::kBranchResolved);
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_THAT(resolved[0].branch_resolved().reason(),
              ::testing::AllOf(::testing::HasSubstr("answer «8» from 2 of 4 traces, summed "
                                                    "confidence"),
                               ::testing::HasSubstr("2 traces left out of the vote")));
  job->ReadTree([](const SearchTree& tree) {
    EXPECT_THAT(tree.branch_note(3), ::testing::EndsWith("· stopped: confidence fell"));
    EXPECT_THAT(tree.branch_note(2), ::testing::EndsWith("· not among the most confident"));
  });
  ExpectCleanFinish(*job, *h.worker);
}

// Sampled traces (temperature > 0): the fork draws distinct candidates, here both tokens of a
// fair coin (the width is only an upper bound), and each step outside it is one plain draw.
Script CoinScript() {
  return ByGenerated({
      {{}, Lelv({{4, 0.5}, {5, 0.5}})},
      {{4}, Lelv({{8, 0.5}, {9, 0.5}})},
      {{5}, Lelv({{8, 0.5}, {9, 0.5}})},
  });
}

TEST(JobTraceTest, SampledTracesDrawTheirStartsAndSteps) {
  Harness h(CoinScript());
  JobSpec spec = BaseSpec(10);
  spec.policy.mode = entropix::PolicyMode::kTrace;
  spec.policy.trace.width = 6;
  spec.policy.trace.temperature = 1.0f;
  spec.policy.sampling.min_p = 0.0f;
  auto job = h.Make(spec);
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  const auto opened = h.Of(arbor::v1::GenerateEvent::kBranchOpened);
  ASSERT_EQ(opened.size(), 1u);
  EXPECT_EQ(opened[0].branch_opened().candidates_size(), 2);
  const auto rollout = h.worker->requests()[1];
  for (const arbor::v1::RunItem& item : rollout.items()) {
    EXPECT_FLOAT_EQ(item.policy().trace().temperature(), 1.0f);
  }
  int adaptive = 0;
  for (const auto& event : h.Of(arbor::v1::GenerateEvent::kFinished)) {
    adaptive += event.finished().strategies().adaptive();
  }
  EXPECT_EQ(adaptive, 4) << "each trace draws its second token and the eos after it";
  EXPECT_EQ(RunToTree(CoinScript(), spec), RunToTree(CoinScript(), spec)) << "same seed, same tree";
}

// The traces' text reaches the client while the search runs, trace after trace and without
// their end tokens, all before the chosen answer's tokens; a client that opted out gets none.
TEST(JobTraceTest, TracesStreamAsReasoningBeforeTheAnswer) {
  for (const bool reasoning : {true, false}) {
    Harness h(CotScript());
    JobSpec spec = CotSpec(/*aggregate=*/true);
    spec.reasoning = reasoning;
    auto job = h.Make(spec);
    job->Start();
    ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
    std::vector<std::string> traces;
    bool answered = false;
    for (const arbor::v1::GenerateEvent& event : h.events) {
      answered = answered || event.has_token();
      if (!event.has_reasoning()) continue;
      EXPECT_FALSE(answered) << "reasoning after the answer began";
      const arbor::v1::ReasoningEvent& r = event.reasoning();
      ASSERT_LE(r.trace(), static_cast<int>(traces.size())) << "traces come in order";
      if (r.trace() == static_cast<int>(traces.size())) traces.emplace_back();
      traces[r.trace()] += r.text();
      EXPECT_EQ(r.parent_trace(), -1) << "forked from the answer";
    }
    if (reasoning) {
      EXPECT_THAT(traces, ::testing::ElementsAre("47", "58", "67"));
    } else {
      EXPECT_THAT(traces, ::testing::IsEmpty());
    }
    EXPECT_EQ(job->text(), "47");
  }
}

TEST(JobTraceTest, SameSeedSameTree) {
  EXPECT_EQ(RunToTree(CotScript(), CotSpec(true)), RunToTree(CotScript(), CotSpec(true)));
}

}  // namespace
}  // namespace arbor::coordinator
