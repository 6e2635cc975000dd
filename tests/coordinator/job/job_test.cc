// The job driver against a worker scripted by metrics (scripted_worker.h): every row of the
// decision matrix in SEARCH and CANONICAL modes, INSERT and BACKSPACE budgets, stops,
// cancellation and reproducibility. Branches are in job_branch_test.cc, re-homing and waiting
// for KV in job_failover_test.cc.
#include "coordinator/job/job.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/job/job_harness.h"

namespace arbor::coordinator {
namespace {

using testing::Adaptive;
using testing::BaseSpec;
using testing::ByPosition;
using ::testing::ElementsAre;
using testing::ExpectCleanFinish;
using testing::Harness;
using testing::Hehv;
using testing::Helv;
using ::testing::IsEmpty;
using testing::kEos;
using testing::kInsertToken;
using testing::kSeed;
using testing::Lehv;
using testing::Lelv;
using testing::RunToTree;
using testing::ScriptedStep;
using testing::ScriptInput;
using testing::Spread;

TEST(JobTest, ArgmaxRunsOnTheWorkerToMaxTokens) {
  Harness h(ByPosition({}));
  JobOptions options;
  options.first_run_steps = 8;  // No ramp (MainRunsRampUpFromFirstRunSteps).
  auto job = h.Make(BaseSpec(8), options);
  job->Start();
  EXPECT_EQ(job->finish_reason(), arbor::v1::FINISH_REASON_MAX_TOKENS);
  EXPECT_THAT(job->token_ids(), ElementsAre(10, 10, 10, 10, 10, 10, 10, 10));
  EXPECT_EQ(job->text(), "::::::::");
  const auto requests = h.worker->requests();
  ASSERT_EQ(requests.size(), 1u) << "a confident model costs one Run";
  const arbor::v1::RunItem& item = requests[0].items(0);
  EXPECT_FALSE(item.has_fork_from());
  EXPECT_THAT(item.append(), ElementsAre(1, 2, 3));
  EXPECT_EQ(item.max_steps(), 8);
  EXPECT_TRUE(item.stop_on_structural());
  EXPECT_EQ(item.seed(), kSeed);
  EXPECT_EQ(job->strategy_counts().argmax(), 8);
  EXPECT_EQ(job->usage().generated_tokens(), 8);
  EXPECT_EQ(h.Of(arbor::v1::GenerateEvent::kToken).size(), 8u);
  ASSERT_EQ(h.events.back().event_case(), arbor::v1::GenerateEvent::kFinished);
  ExpectCleanFinish(*job, *h.worker);
}

// The request's logit processors ride on every Run item, with the prompt length that tells the
// worker where the output starts; a job without them sends none.
TEST(JobTest, LogitProcessorsReachEveryRunItem) {
  Harness h(ByPosition({}));
  JobSpec spec = BaseSpec(6);
  spec.processors.set_presence_penalty(0.5f);
  (*spec.processors.mutable_logit_bias())[7] = -3.0f;
  auto job = h.Make(spec);
  job->Start();
  const auto requests = h.worker->requests();
  ASSERT_FALSE(requests.empty());
  for (const auto& request : requests) {
    for (const arbor::v1::RunItem& item : request.items()) {
      EXPECT_FLOAT_EQ(item.processors().presence_penalty(), 0.5f);
      EXPECT_FLOAT_EQ(item.processors().logit_bias().at(7), -3.0f);
      EXPECT_EQ(item.prompt_length(), 3);
    }
  }
  Harness plain(ByPosition({}));
  auto other = plain.Make(BaseSpec(2));
  other->Start();
  for (const auto& request : plain.worker->requests()) {
    EXPECT_FALSE(request.items(0).has_processors());
  }
}

TEST(JobTest, StepsPerRunSplitsTheMainPath) {
  Harness h(ByPosition({}));
  JobOptions options;
  options.steps_per_run = 3;
  auto job = h.Make(BaseSpec(8), options);
  job->Start();
  const auto requests = h.worker->requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[1].items(0).sequence_id(), requests[0].items(0).sequence_id());
  EXPECT_THAT(requests[1].items(0).append(), IsEmpty()) << "continue, nothing to re-send";
  EXPECT_EQ(requests[2].items(0).max_steps(), 2);
  EXPECT_EQ(requests[2].items(0).generated_before(), 6);
  EXPECT_EQ(job->token_ids().size(), 8u);
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, MainRunsRampUpFromFirstRunSteps) {
  Harness h(ByPosition({}));
  JobOptions options;
  options.stream_runs = false;
  options.first_run_steps = 2;
  options.steps_per_run = 8;
  auto job = h.Make(BaseSpec(30), options);
  job->Start();
  std::vector<int32_t> sizes;
  for (const arbor::v1::RunRequest& request : h.worker->requests()) {
    sizes.push_back(request.items(0).max_steps());
  }
  // As many steps as generated so far (at least 2, at most 8), the last one cut to max_tokens.
  EXPECT_THAT(sizes, ElementsAre(2, 2, 4, 8, 8, 6));
  EXPECT_EQ(h.Of(arbor::v1::GenerateEvent::kToken).size(), 30u);
  ExpectCleanFinish(*job, *h.worker);
}

// A streamed main-path Run: the tokens the worker has made final reach the client while the Run
// is still out, and its answer adds only what was not streamed.
TEST(JobTest, StreamedRunsSendTokensBeforeTheRunAnswers) {
  Harness h(ByPosition({}));
  auto job = h.StartHeld(8, 8);
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_RUNNING);
  EXPECT_EQ(h.Of(arbor::v1::GenerateEvent::kToken).size(), 7u) << "all but the run's last step";
  EXPECT_EQ(job->token_ids().size(), 7u);
  h.worker->ReleaseHeld();
  EXPECT_EQ(job->finish_reason(), arbor::v1::FINISH_REASON_MAX_TOKENS);
  EXPECT_THAT(job->token_ids(), ElementsAre(10, 10, 10, 10, 10, 10, 10, 10));
  EXPECT_EQ(h.Of(arbor::v1::GenerateEvent::kToken).size(), 8u) << "none twice";
  EXPECT_EQ(h.worker->requests().size(), 1u) << "no ramp: one Run";
  ExpectCleanFinish(*job, *h.worker);
}

// Tokens say whether a BACKSPACE could still retract them, so clients that cannot retract text
// hold back only those: SEARCH with backspace budget left, not CANONICAL.
TEST(JobTest, TokensAreFinalWhereThePolicyCannotBackspace) {
  for (const entropix::PolicyMode mode :
       {entropix::PolicyMode::kSearch, entropix::PolicyMode::kCanonical}) {
    Harness h(ByPosition({}));
    JobSpec spec = BaseSpec(4);
    spec.policy.mode = mode;
    auto job = h.Make(spec);
    job->Start();
    const auto tokens = h.Of(arbor::v1::GenerateEvent::kToken);
    ASSERT_EQ(tokens.size(), 4u);
    for (const auto& event : tokens) {
      EXPECT_EQ(event.token().final(), mode == entropix::PolicyMode::kCanonical);
    }
  }
  Harness h(ByPosition({}));
  JobSpec spent = BaseSpec(4);
  spent.policy.backspace.max_per_job = 0;
  auto job = h.Make(spent);
  job->Start();
  for (const auto& event : h.Of(arbor::v1::GenerateEvent::kToken)) {
    EXPECT_TRUE(event.token().final());
  }
}

// The worker undoes a run that fails, streamed steps included; the tree keeps them, so the job
// prefills them where it goes on and generates nothing twice.
TEST(JobTest, ARunThatFailsAfterStreamingResumesFromTheTree) {
  Harness h(ByPosition({}));
  auto job = h.StartHeld(8, 8);
  ASSERT_EQ(job->token_ids().size(), 7u);
  h.worker->AbandonRuns();  // UNAVAILABLE: the job moves to the spare worker.
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  const auto spare_requests = h.spare->requests();
  ASSERT_FALSE(spare_requests.empty());
  EXPECT_THAT(spare_requests[0].items(0).append(),
              ElementsAre(1, 2, 3, 10, 10, 10, 10, 10, 10, 10));
  EXPECT_EQ(spare_requests[0].items(0).max_steps(), 1);
  EXPECT_EQ(job->token_ids().size(), 8u);
  EXPECT_EQ(h.Of(arbor::v1::GenerateEvent::kToken).size(), 8u);
  ExpectCleanFinish(*job, *h.spare);
}

TEST(JobTest, FirstRunStepsMustBePositive) {
  JobOptions options;
  options.first_run_steps = 0;
  EXPECT_THAT(Job::Create(BaseSpec(8), options, {}).status().message(),
              ::testing::HasSubstr("first_run_steps"));
}

// Positions: 3 ARGMAX, 4 ADAPTIVE, 5 BRANCH (children calm at 6, 7), 8 INSERT, 9 HEHV right
// after an insert (RESAMPLE), 10 HEHV → BACKSPACE of 9 and re-draw, 10 again → RESAMPLE.
std::map<int32_t, ScriptedStep> EveryRow() {
  return {{4, Adaptive(Spread(20, 8))},
          {5, Lehv(Spread(30, 6))},
          {8, Helv(Spread(40, 8))},
          {9, Hehv(Spread(44, 8))},
          {10, Hehv(Spread(50, 8))}};
}

TEST(JobTest, SearchModeTakesEveryRowOfTheMatrix) {
  Harness h(ByPosition(EveryRow()));
  auto job = h.Make(BaseSpec(10));
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  const arbor::v1::StrategyCounts counts = job->strategy_counts();
  EXPECT_GE(counts.argmax(), 1);
  EXPECT_EQ(counts.adaptive(), 1);
  EXPECT_EQ(counts.branch(), 1);
  EXPECT_EQ(counts.insert(), 1);
  EXPECT_EQ(counts.backspace(), 1);
  EXPECT_GE(counts.resample(), 2) << "after an insert, and at a position already re-drawn";
  job->ReadTree([](const SearchTree& tree) {
    EXPECT_EQ(tree.CountStatus(arbor::v1::NODE_STATUS_INSERTED), 1);
    EXPECT_EQ(tree.CountStatus(arbor::v1::NODE_STATUS_BACKSPACED), 1);
    EXPECT_GT(tree.CountStatus(arbor::v1::NODE_STATUS_PRUNED), 0);
    const std::vector<int32_t> committed = tree.CommittedTokenIds();
    EXPECT_EQ(committed[8 - 3], kInsertToken);
  });
  EXPECT_EQ(h.Of(arbor::v1::GenerateEvent::kBranchOpened).size(), 1u);
  EXPECT_EQ(h.Of(arbor::v1::GenerateEvent::kBranchResolved).size(), 1u);
  EXPECT_EQ(h.Of(arbor::v1::GenerateEvent::kInsert).size(), 1u);
  EXPECT_EQ(h.Of(arbor::v1::GenerateEvent::kBackspace).size(), 1u);
  EXPECT_EQ(job->finish_reason(), arbor::v1::FINISH_REASON_MAX_TOKENS);
  for (const auto& request : h.worker->requests()) {
    EXPECT_EQ(request.job_id(), "job-1") << "main path and rollouts: the worker's fair share key";
  }
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, CanonicalModeSamplesRowsTwoToFourOnTheWorker) {
  Harness h(ByPosition({{3, Helv(Spread(40, 8))},
                        {4, Helv(Spread(40, 8))},
                        {5, Lehv(Spread(30, 6))},
                        {6, Hehv(Spread(44, 8))},
                        {7, Adaptive(Spread(20, 8))}}));
  JobSpec spec = BaseSpec(8);
  spec.policy.mode = entropix::PolicyMode::kCanonical;
  auto job = h.Make(spec);
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  for (const auto& request : h.worker->requests()) {
    EXPECT_FALSE(request.items(0).stop_on_structural());
    EXPECT_FALSE(request.items(0).has_fork_from()) << "CANONICAL never forks";
  }
  std::vector<arbor::v1::Strategy> strategies;
  job->ReadTree([&](const SearchTree& tree) {
    for (NodeId id : tree.committed_path().subspan(1)) strategies.push_back(tree.node(id).strategy);
    EXPECT_EQ(tree.node(tree.committed_path()[1]).status, arbor::v1::NODE_STATUS_INSERTED);
  });
  ASSERT_GE(strategies.size(), 5u);
  EXPECT_EQ(strategies[0], arbor::v1::STRATEGY_INSERT);
  EXPECT_EQ(strategies[1], arbor::v1::STRATEGY_HOT_SAMPLE) << "one-token cooldown";
  EXPECT_EQ(strategies[2], arbor::v1::STRATEGY_BRANCH_SAMPLE);
  EXPECT_EQ(strategies[3], arbor::v1::STRATEGY_RESAMPLE);
  EXPECT_EQ(strategies[4], arbor::v1::STRATEGY_ADAPTIVE);
  EXPECT_EQ(job->token_ids()[0], kInsertToken);
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, InsertRespectsCooldownAndBudget) {
  Harness h([](const ScriptInput&) { return Helv(Spread(40, 8)); });
  JobSpec spec = BaseSpec(40);
  spec.policy.insert.cooldown = 4;
  spec.policy.insert.max_per_job = 3;
  auto job = h.Make(spec);
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  std::vector<int32_t> inserted;
  job->ReadTree([&](const SearchTree& tree) {
    for (NodeId id : tree.committed_path().subspan(1)) {
      const Node& n = tree.node(id);
      if (n.status == arbor::v1::NODE_STATUS_INSERTED) {
        inserted.push_back(n.position);
      } else {
        EXPECT_EQ(n.strategy, arbor::v1::STRATEGY_HOT_SAMPLE) << "the HELV fallback";
      }
    }
  });
  ASSERT_EQ(inserted.size(), 3u) << "insert.max_per_job";
  for (size_t i = 1; i < inserted.size(); ++i) EXPECT_GT(inserted[i] - inserted[i - 1], 4);
  EXPECT_EQ(job->strategy_counts().insert(), 3);
  ExpectCleanFinish(*job, *h.worker);
}

// The request is checked once, at the edge; the job only checks that its parts agree: a TRACE
// pattern comes compiled.
TEST(JobTest, AnAnswerPatternArrivesCompiled) {
  JobSpec spec = BaseSpec(6);
  spec.policy.mode = entropix::PolicyMode::kTrace;
  spec.policy.trace.answer_pattern = R"((\d)$)";
  EXPECT_THAT(Job::Create(spec, {}, {}).status().message(),
              ::testing::HasSubstr("answer_pattern must be compiled"));
}

TEST(JobTest, InsertTokensMayBeEmptyOnlyWhenInsertIsOff) {
  Harness h(ByPosition({{4, Helv(Spread(20, 8))}}));
  JobSpec spec = BaseSpec(6);
  spec.policy.insert.tokens.clear();
  EXPECT_THAT(Job::Create(spec, {}, {}).status().message(), ::testing::HasSubstr("insert.tokens"));
  spec.policy.insert.max_per_job = 0;
  auto job = h.Make(spec);
  job->Start();
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_EQ(job->strategy_counts().insert(), 0);
  EXPECT_EQ(job->strategy_counts().hot_sample(), 1) << "HELV falls back to the hot sample";
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, BackspaceRedrawsOncePerPositionWithinBudget) {
  Harness h([](const ScriptInput&) { return Hehv(Spread(20, 10)); });
  JobSpec spec = BaseSpec(12);
  spec.policy.backspace.max_per_job = 2;
  auto job = h.Make(spec);
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  const auto backspaces = h.Of(arbor::v1::GenerateEvent::kBackspace);
  ASSERT_EQ(backspaces.size(), 2u) << "backspace.max_per_job";
  std::set<int32_t> positions;
  job->ReadTree([&](const SearchTree& tree) {
    for (const auto& e : backspaces) {
      const int32_t pos = e.backspace().position();
      EXPECT_GE(pos, 3) << "never the prompt (positions 0..2)";
      EXPECT_TRUE(positions.insert(pos).second) << "once per position";
      const Node& redrawn = tree.node(tree.committed_path()[pos - 2]);
      EXPECT_EQ(redrawn.position, pos);
      EXPECT_NE(redrawn.token_id, e.backspace().removed_token_id()) << "the ban holds";
      EXPECT_EQ(redrawn.strategy, arbor::v1::STRATEGY_RESAMPLE);
    }
  });
  // The worker truncated and appended exactly the re-drawn token.
  int continues = 0;
  for (const auto& request : h.worker->requests()) {
    const arbor::v1::RunItem& item = request.items(0);
    if (!item.has_truncate_to()) continue;
    ++continues;
    ASSERT_EQ(item.append_size(), 1);
    EXPECT_TRUE(std::any_of(item.bans().begin(), item.bans().end(),
                            [&](const auto& ban) { return ban.position() == item.truncate_to(); }));
  }
  EXPECT_EQ(continues, 2);
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, BackspaceRedrawNeverReturnsTheBannedToken) {
  // Two tokens only: the re-draw must take the other one whatever the seed.
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Harness h(ByPosition({{3, Adaptive({{20, 0.6}, {21, 0.4}})}, {4, Hehv(Spread(30, 4))}}));
    JobSpec spec = BaseSpec(3);
    spec.seed = seed;
    auto job = h.Make(spec);
    job->Start();
    const auto backspaces = h.Of(arbor::v1::GenerateEvent::kBackspace);
    ASSERT_EQ(backspaces.size(), 1u);
    EXPECT_NE(job->token_ids()[0], backspaces[0].backspace().removed_token_id());
  }
}

TEST(JobTest, StopStringCutsTheText) {
  // Tokens 10, 11, 12, ... decode to ":;<=>?".
  Harness h([](const ScriptInput& in) { return Lelv({{10 + (in.position - 3), 1.0}}); });
  JobSpec spec = BaseSpec(20);
  spec.stop_strings = {"<=", "xyz"};
  auto job = h.Make(spec);
  job->Start();
  EXPECT_EQ(job->finish_reason(), arbor::v1::FINISH_REASON_STOP_STRING);
  EXPECT_EQ(job->text(), ":;");
  // "<" could start "<=": it is held back, so the stream never shows part of a stop string.
  std::vector<std::string> pieces;
  for (const auto& e : h.Of(arbor::v1::GenerateEvent::kToken)) pieces.push_back(e.token().text());
  EXPECT_THAT(pieces, ElementsAre(":", ";", "", ""));
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, StopTokenEndsTheJob) {
  Harness h(ByPosition({{5, Lelv({{kEos, 1.0}})}}));
  auto job = h.Make(BaseSpec(20));
  job->Start();
  EXPECT_EQ(job->finish_reason(), arbor::v1::FINISH_REASON_STOP_TOKEN);
  EXPECT_THAT(job->token_ids(), ElementsAre(10, 10, kEos));
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, TheStopTokensTextIsNotPartOfTheAnswer) {
  // Tokens 10 decode to ':', kEos to 'o'. With a stop string ":;" a ':' is held back until it
  // cannot start one; the stop token releases it and adds nothing of its own.
  Harness h(ByPosition({{5, Lelv({{kEos, 1.0}})}}));
  JobSpec spec = BaseSpec(20);
  spec.stop_strings = {":;"};
  auto job = h.Make(spec);
  job->Start();
  EXPECT_EQ(job->finish_reason(), arbor::v1::FINISH_REASON_STOP_TOKEN);
  EXPECT_THAT(job->token_ids(), ElementsAre(10, 10, kEos));
  EXPECT_EQ(job->text(), "::");
  std::vector<std::string> pieces;
  for (const auto& e : h.Of(arbor::v1::GenerateEvent::kToken)) pieces.push_back(e.token().text());
  EXPECT_THAT(pieces, ElementsAre("", ":", ":"));
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, DeadlineFinishesTheJob) {
  base::FakeClock* clock = nullptr;
  Harness h([&clock](const ScriptInput&) {
    clock->Advance(absl::Seconds(1));
    return Lelv({{10, 1.0}});
  });
  clock = &h.clock;
  JobSpec spec = BaseSpec(100);
  spec.deadline = h.clock.Now() + absl::Milliseconds(4500);
  JobOptions options;
  options.steps_per_run = 2;
  auto job = h.Make(spec, options);
  job->Start();
  EXPECT_EQ(job->finish_reason(), arbor::v1::FINISH_REASON_DEADLINE);
  EXPECT_EQ(job->token_ids().size(), 6u);
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, CancelMidBranchReleasesEverything) {
  Harness h(ByPosition({{3, Lehv(Spread(30, 6))}}));
  h.worker->Hold(true);
  auto job = h.Make(BaseSpec(10));
  job->Start();
  h.worker->ReleaseHeld();  // The first run stops on BRANCH; the rollout is now in flight.
  ASSERT_EQ(h.worker->requests().size(), 2u);
  EXPECT_EQ(h.worker->live().size(), 5u) << "main + 4 children";
  job->Cancel();
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(job->finish_reason(), arbor::v1::FINISH_REASON_CANCELLED);
  EXPECT_EQ(h.worker->cancelled_runs(), 1) << "the rollout in flight is stopped, not left to run";
  EXPECT_THAT(h.worker->live(), IsEmpty());
  ASSERT_EQ(h.events.back().event_case(), arbor::v1::GenerateEvent::kFinished);
  const size_t events = h.events.size();
  h.worker->ReleaseHeld();  // Nothing is left to answer.
  EXPECT_EQ(h.events.size(), events);
  EXPECT_EQ(h.worker->requests().size(), 2u);
  EXPECT_THAT(h.worker->live(), IsEmpty());
}

TEST(JobTest, AbandonFailsTheJobWithItsReasonAndReleasesEverything) {
  Harness h(ByPosition({{3, Lehv(Spread(30, 6))}}));
  h.worker->Hold(true);
  auto job = h.Make(BaseSpec(10));
  job->Start();
  h.worker->ReleaseHeld();  // A rollout is in flight.
  job->Abandon(absl::AbortedError("coordinator b took it over"));
  EXPECT_EQ(job->state(), arbor::v1::JOB_STATE_FAILED);
  EXPECT_EQ(job->finish_reason(), arbor::v1::FINISH_REASON_ERROR);
  EXPECT_THAT(job->error(), ::testing::HasSubstr("coordinator b took it over"));
  EXPECT_EQ(h.worker->cancelled_runs(), 1);
  EXPECT_THAT(h.worker->live(), IsEmpty());
  ASSERT_EQ(h.events.back().event_case(), arbor::v1::GenerateEvent::kFinished);
  EXPECT_THAT(h.events.back().finished().error(),
              ::testing::HasSubstr("coordinator b took it over"));
}

TEST(JobTest, SameSeedGivesTheSameTree) {
  auto run = [](uint64_t seed) {
    JobSpec spec = BaseSpec(10);
    spec.seed = seed;
    return RunToTree(ByPosition(EveryRow()), spec);
  };
  EXPECT_EQ(run(kSeed), run(kSeed));
  EXPECT_EQ(run(7), run(7));
}

TEST(JobTest, HeldBackTextIsReleasedWhenItCannotMatch) {
  // Tokens 10, 11, 12 decode to ":;<"; the stop string ";<x" never completes.
  Harness h([](const ScriptInput& in) { return Lelv({{10 + (in.position - 3) % 3, 1.0}}); });
  JobSpec spec = BaseSpec(5);
  spec.stop_strings = {";<x"};
  auto job = h.Make(spec);
  job->Start();
  EXPECT_EQ(job->finish_reason(), arbor::v1::FINISH_REASON_MAX_TOKENS);
  std::vector<std::string> pieces;
  for (const auto& e : h.Of(arbor::v1::GenerateEvent::kToken)) pieces.push_back(e.token().text());
  EXPECT_THAT(pieces, ElementsAre(":", "", "", ";<:", ";")) << "the last token flushes";
  EXPECT_EQ(job->text(), ":;<:;");
}

}  // namespace
}  // namespace arbor::coordinator
