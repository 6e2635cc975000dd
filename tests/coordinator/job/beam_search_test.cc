// BEAM mode of BRANCH (coordinator/job/beam_search.h) driven through a fake BranchHost alone
// (fake_branch_host.h), the test answering each one-step Run by hand: every live beam in one
// Run, the width best expansions by cumulative logprob kept (a beam kept with several tokens
// forks, one kept with a token it did not sample truncates), the others pruned and released,
// finished beams competing as they are, and the commit of the best beam.
#include "coordinator/job/beam_search.h"

#include <memory>
#include <utility>
#include <vector>

#include "arbor/v1/worker.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/job/fake_branch_host.h"

namespace arbor::coordinator {
namespace {

using arbor::v1::RunItem;
using arbor::v1::RunResponse;
using arbor::v1::RunResult;
using ::testing::ElementsAre;
using testing::FakeBranchHost;
using testing::FakeHostSpec;
using ::testing::IsEmpty;
using testing::kFirstRolloutSequence;
using testing::kHostEos;
using testing::kMainSequence;
using testing::StepMetrics;

constexpr int32_t kPrompt = 3;  // FakeHostSpec's prompt length: the branch point's position.

// Not calm (H above branch.calm_entropy): beams end on max_len, a stop token or the context.
// Every step has these metrics, so scores differ by their mean logprobs alone.
arbor::v1::Metrics Uncertain() { return StepMetrics(3.0f, 0.5f); }
arbor::v1::Metrics Calm() { return StepMetrics(0.1f, 0.1f); }

JobSpec BeamSpec() {
  JobSpec spec = FakeHostSpec(10);
  spec.policy.branch.mode = entropix::BranchMode::kBeam;
  spec.policy.branch.width = 3;
  spec.policy.branch.max_len = 3;  // The candidate and two beam steps.
  return spec;
}

class BeamSearchTest : public ::testing::Test {
 protected:
  // A branch at the tail with the candidates 30, 31, 32 (logprobs -0.2, -0.5, -1.0), one beam
  // each, in sequences 100, 101, 102.
  void Open(JobSpec spec) {
    host_ = std::make_unique<FakeBranchHost>(std::move(spec));
    host_->ScriptCandidates({{30, -0.2f}, {31, -0.5f}, {32, -1.0f}});
    const arbor::v1::StepResult branch = testing::StructuralStep(
        kPrompt, arbor::v1::STRATEGY_BRANCH, {{30, -0.2f}, {31, -0.5f}, {32, -1.0f}}, Uncertain());
    absl::StatusOr<std::vector<Rollout>> beams = host_->OpenMainBranch(branch);
    ASSERT_TRUE(beams.ok()) << beams.status();
    ASSERT_EQ(beams->size(), 3u);
    beams_ = *beams;
    search_ = std::make_unique<BeamSearch>(host_->tree().tail(), *std::move(beams));
  }

  void SendRun() {
    BranchStrategy::Next next = host_->Send(*search_);
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_FALSE(next->has_value()) << "committed instead of sending";
  }

  // Answers the Run in flight; the search must go on.
  void AnswerStep(const RunResponse& response) {
    BranchStrategy::Next next = host_->Answer(*search_, response);
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_FALSE(next->has_value()) << "a beam step never commits";
  }

  // The commit Send answers once every beam is done, into `commit`.
  void Commit(BranchCommit& commit) {
    const size_t runs = host_->runs().size();
    BranchStrategy::Next next = host_->Send(*search_);
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_TRUE(next->has_value()) << "a beam is not done";
    EXPECT_EQ(host_->runs().size(), runs) << "no Run once every beam is done";
    commit = **next;
  }

  // One beam step of `sequence` at its next position: the worker sampled `token` (`logprob`),
  // the step's top-K is `top_k`.
  RunResult Stepped(uint64_t sequence, int32_t token, float logprob,
                    std::vector<TokenAlternative> top_k,
                    const arbor::v1::Metrics& metrics = Uncertain()) const {
    RunResult result;
    result.set_sequence_id(sequence);
    *result.add_steps() =
        testing::TokenStep(host_->Length(sequence), token, logprob, metrics, std::move(top_k));
    result.set_stop_reason(arbor::v1::STOP_REASON_MAX_STEPS);
    return result;
  }

  // Step 1 of BeamSpec's beams. Expansions by cumulative logprob: 30+40 -0.3, 30+41 -0.5,
  // 32+43 -1.05, 31+42 -2.5. Beam 31 drops out although its candidate beats 32's. Beam 30 is
  // kept twice: with 41, which it sampled (its own sequence), and 40 (a fork); beam 32 with 43,
  // which it did not sample (its sequence truncated, 43 appended).
  void PlayFirstStep(const arbor::v1::Metrics& metrics = Uncertain()) {
    ASSERT_NO_FATAL_FAILURE(SendRun());
    RunResponse response;
    *response.add_results() = Stepped(Seq(0), 41, -0.3f, {{40, -0.1f}, {41, -0.3f}}, metrics);
    *response.add_results() = Stepped(Seq(1), 42, -2.0f, {{42, -2.0f}}, metrics);
    *response.add_results() = Stepped(Seq(2), 44, -3.0f, {{43, -0.05f}, {44, -3.0f}}, metrics);
    ASSERT_NO_FATAL_FAILURE(AnswerStep(response));
  }

  uint64_t Seq(int i) const { return kFirstRolloutSequence + i; }
  // The ids of `node`'s children's tokens.
  std::vector<int32_t> ChildTokens(NodeId node) const {
    std::vector<int32_t> tokens;
    for (NodeId child : host_->tree().Children(node)) {
      tokens.push_back(host_->tree().node(child).token_id);
    }
    return tokens;
  }

  std::unique_ptr<FakeBranchHost> host_;
  std::vector<Rollout> beams_;
  std::unique_ptr<BeamSearch> search_;
};

TEST_F(BeamSearchTest, TheFirstStepRunsEveryBeamOneStepInOneRun) {
  ASSERT_NO_FATAL_FAILURE(Open(BeamSpec()));
  ASSERT_NO_FATAL_FAILURE(SendRun());
  ASSERT_EQ(host_->forks().size(), 1u);
  EXPECT_EQ(host_->forks()[0].width, 3) << "branch.width beams";
  EXPECT_EQ(host_->forks()[0].max_len, 3);
  const arbor::v1::RunRequest& request = host_->last_request();
  ASSERT_EQ(request.items_size(), 3);
  for (int i = 0; i < 3; ++i) {
    const RunItem& item = request.items(i);
    EXPECT_EQ(item.sequence_id(), Seq(i));
    EXPECT_EQ(item.fork_from(), kMainSequence);
    EXPECT_EQ(item.fork_length(), kPrompt);
    EXPECT_THAT(item.append(), ElementsAre(30 + i));
    EXPECT_EQ(item.max_steps(), 1) << "a beam step is one decode step";
    EXPECT_EQ(item.branch_id(), beams_[i].branch_id);
    EXPECT_EQ(item.branch_depth(), 1);
    EXPECT_FALSE(item.stop_on_structural()) << "beams never nest";
    EXPECT_GE(item.top_k(), 3) << "each beam's expansions come from its top-K";
    EXPECT_EQ(item.generated_before(), 1);
  }
}

TEST_F(BeamSearchTest, AStepKeepsTheWidthBestExpansionsByCumulativeLogprob) {
  ASSERT_NO_FATAL_FAILURE(Open(BeamSpec()));
  ASSERT_NO_FATAL_FAILURE(PlayFirstStep());
  EXPECT_THAT(host_->released(), ElementsAre(Seq(1))) << "the dropped beam";
  const SearchTree& tree = host_->tree();
  EXPECT_EQ(tree.node(beams_[1].candidate).status, arbor::v1::NODE_STATUS_PRUNED);
  EXPECT_THAT(ChildTokens(beams_[0].candidate), ElementsAre(40, 41));
  EXPECT_THAT(ChildTokens(beams_[2].candidate), ElementsAre(43));
  for (NodeId child : tree.Children(beams_[0].candidate)) {
    const Node& node = tree.node(child);
    EXPECT_EQ(node.strategy,
              node.token_id == 41 ? arbor::v1::STRATEGY_ARGMAX : arbor::v1::STRATEGY_FORCED)
        << "a token the search chose, not the worker, is FORCED";
  }
  EXPECT_EQ(host_->CountOf(arbor::v1::STRATEGY_ARGMAX), 3);

  ASSERT_NO_FATAL_FAILURE(SendRun());
  const arbor::v1::RunRequest& request = host_->last_request();
  ASSERT_EQ(request.items_size(), 3) << "the width is kept";
  const RunItem& fork = request.items(0);  // 30+40, the best.
  EXPECT_EQ(fork.sequence_id(), Seq(3)) << "a new sequence";
  EXPECT_EQ(fork.fork_from(), Seq(0));
  EXPECT_EQ(fork.fork_length(), kPrompt + 1) << "beam 30's sequence before its step";
  EXPECT_THAT(fork.append(), ElementsAre(40));
  EXPECT_NE(fork.branch_id(), beams_[0].branch_id) << "a fork draws on its own RNG branch";
  const RunItem& sampled = request.items(1);  // 30+41.
  EXPECT_EQ(sampled.sequence_id(), Seq(0));
  EXPECT_TRUE(sampled.continues());
  EXPECT_FALSE(sampled.has_truncate_to());
  EXPECT_THAT(sampled.append(), IsEmpty()) << "41 is on the worker already";
  const RunItem& truncated = request.items(2);  // 32+43.
  EXPECT_EQ(truncated.sequence_id(), Seq(2));
  EXPECT_TRUE(truncated.continues());
  EXPECT_EQ(truncated.truncate_to(), kPrompt + 1) << "drops the sampled 44";
  EXPECT_THAT(truncated.append(), ElementsAre(43));
  for (const RunItem& item : request.items()) {
    EXPECT_EQ(item.max_steps(), 1);
    EXPECT_EQ(item.generated_before(), 2);
  }
}

// Step 2: expansions 30+40+50 -0.5, 30+41+52 -0.6, 30+40+51 -0.7, 32+43+53 -1.15. The best
// beam keeps a token its sequence did not sample: still to be forked when the search ends, so
// the main path continues on the sequence it would fork from, truncated, with 50 appended.
TEST_F(BeamSearchTest, TheBestBeamWinsAndAnUnforkedWinnerContinuesOnItsParent) {
  ASSERT_NO_FATAL_FAILURE(Open(BeamSpec()));
  ASSERT_NO_FATAL_FAILURE(PlayFirstStep());
  ASSERT_NO_FATAL_FAILURE(SendRun());
  RunResponse response;
  *response.add_results() = Stepped(Seq(3), 51, -0.4f, {{50, -0.2f}, {51, -0.4f}});
  *response.add_results() = Stepped(Seq(0), 52, -0.1f, {{52, -0.1f}});
  *response.add_results() = Stepped(Seq(2), 53, -0.1f, {{53, -0.1f}});
  ASSERT_NO_FATAL_FAILURE(AnswerStep(response));
  EXPECT_THAT(host_->released(), ElementsAre(Seq(1), Seq(2)));

  BranchCommit commit;
  ASSERT_NO_FATAL_FAILURE(Commit(commit));
  EXPECT_EQ(host_->tree().node(commit.winner_leaf).token_id, 50);
  EXPECT_EQ(commit.main_sequence, Seq(3));
  EXPECT_FALSE(commit.source.fork_from.has_value());
  EXPECT_EQ(commit.source.truncate_to, kPrompt + 2);
  EXPECT_THAT(commit.source.append, ElementsAre(50));
  // Per candidate, its best beam's latest score: 30's winner (mean logprob -0.167), 31 as
  // forked (-0.5), 32 as dropped after step 1 (-0.525).
  ASSERT_EQ(commit.scores.size(), 3u);
  EXPECT_NEAR(commit.scores[0] - commit.scores[1], 0.5 - 0.5 / 3, 1e-4);
  EXPECT_NEAR(commit.scores[1] - commit.scores[2], 0.025, 1e-4);

  absl::StatusOr<BranchResolution> resolution = host_->CommitBranch(*search_, commit);
  ASSERT_TRUE(resolution.ok()) << resolution.status();
  EXPECT_EQ(resolution->winner_candidate, beams_[0].candidate);
  EXPECT_THAT(host_->tree().CommittedTokenIds(), ElementsAre(30, 40, 50));
  EXPECT_THAT(host_->release_calls().back(), ElementsAre(Seq(4), Seq(0), kMainSequence))
      << "every other beam and the old main sequence";
  EXPECT_TRUE(host_->tree().CheckInvariants().ok());
}

// branch.calm_steps 1: a calm step ends a beam, so after one step every beam is done and the
// search commits without another Run. The winner, 30+40, is a fork still to be made.
TEST_F(BeamSearchTest, CalmBeamsEndTheSearch) {
  JobSpec spec = BeamSpec();
  spec.policy.branch.calm_steps = 1;
  ASSERT_NO_FATAL_FAILURE(Open(std::move(spec)));
  ASSERT_NO_FATAL_FAILURE(PlayFirstStep(Calm()));
  BranchCommit commit;
  ASSERT_NO_FATAL_FAILURE(Commit(commit));
  EXPECT_EQ(host_->runs().size(), 1u);
  EXPECT_EQ(host_->tree().node(commit.winner_leaf).token_id, 40);
  EXPECT_EQ(commit.main_sequence, Seq(0));
  EXPECT_EQ(commit.source.truncate_to, kPrompt + 1);
  EXPECT_THAT(commit.source.append, ElementsAre(40));
}

// Beam 30 samples the stop token: it is done, and competes with its cumulative logprob as it
// is (-0.25), never sent again; it outranks expansions of the beams that go on to worse tokens
// (at step 2: 31+45+46 -1.7, 31+45+49 -2.2, 31+42+47 -2.6, 31+42+48 -3.1) and wins.
TEST_F(BeamSearchTest, AFinishedBeamCompetesAsItIs) {
  ASSERT_NO_FATAL_FAILURE(Open(BeamSpec()));
  ASSERT_NO_FATAL_FAILURE(SendRun());
  RunResponse first;
  *first.add_results() = Stepped(Seq(0), kHostEos, -0.05f, {{kHostEos, -0.05f}});
  *first.add_results() = Stepped(Seq(1), 42, -0.1f, {{42, -0.1f}, {45, -0.2f}});
  *first.add_results() = Stepped(Seq(2), 43, -0.1f, {{43, -0.1f}});
  ASSERT_NO_FATAL_FAILURE(AnswerStep(first));
  EXPECT_THAT(host_->released(), ElementsAre(Seq(2))) << "32+43 (-1.1) is fourth";

  ASSERT_NO_FATAL_FAILURE(SendRun());
  EXPECT_THAT(host_->runs().back().ids, ElementsAre(Seq(1), Seq(3))) << "31+42 and its fork 31+45";
  RunResponse second;
  *second.add_results() = Stepped(Seq(1), 47, -2.0f, {{47, -2.0f}, {48, -2.5f}});
  *second.add_results() = Stepped(Seq(3), 46, -1.0f, {{46, -1.0f}, {49, -1.5f}});
  ASSERT_NO_FATAL_FAILURE(AnswerStep(second));
  EXPECT_THAT(host_->released(), ElementsAre(Seq(2), Seq(1))) << "31+42's expansions are last";

  BranchCommit commit;
  ASSERT_NO_FATAL_FAILURE(Commit(commit));
  EXPECT_EQ(host_->tree().node(commit.winner_leaf).token_id, kHostEos);
  EXPECT_EQ(commit.main_sequence, Seq(0));
  EXPECT_FALSE(commit.source.truncate_to.has_value()) << "the winner is on the worker as it is";
  EXPECT_THAT(commit.source.append, IsEmpty());
}

// A step without a token (the worker reached the context) ends the beam where it is; it still
// competes, and is not sent again.
TEST_F(BeamSearchTest, ABeamThatReachedTheContextEndsWhereItIs) {
  ASSERT_NO_FATAL_FAILURE(Open(BeamSpec()));
  ASSERT_NO_FATAL_FAILURE(SendRun());
  RunResponse response;
  *response.add_results() = Stepped(Seq(0), 40, -0.1f, {{40, -0.1f}});
  RunResult& cut = *response.add_results();
  cut.set_sequence_id(Seq(1));
  cut.set_stop_reason(arbor::v1::STOP_REASON_CONTEXT);
  *response.add_results() = Stepped(Seq(2), 43, -0.1f, {{43, -0.1f}});
  ASSERT_NO_FATAL_FAILURE(AnswerStep(response));
  EXPECT_THAT(host_->released(), IsEmpty()) << "30+40, 31 as it is, 32+43: all kept";
  EXPECT_THAT(ChildTokens(beams_[1].candidate), IsEmpty());
  ASSERT_NO_FATAL_FAILURE(SendRun());
  EXPECT_THAT(host_->runs().back().ids, ElementsAre(Seq(0), Seq(2)));
}

}  // namespace
}  // namespace arbor::coordinator
