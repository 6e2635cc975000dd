// ROLLOUT mode of BRANCH (coordinator/job/rollout_search.h) driven through a fake BranchHost
// alone (fake_branch_host.h), the test answering each Run by hand: what the strategy sends
// (one batched Run for every rollout with work left), when a rollout is done (calm, stop token,
// its budget), which rollout it commits, what it releases, and nested branches up to
// branch.max_depth.
#include "coordinator/job/rollout_search.h"

#include <algorithm>
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
using arbor::v1::StepResult;
using ::testing::Contains;
using ::testing::ElementsAre;
using testing::FakeBranchHost;
using testing::FakeHostSpec;
using ::testing::IsEmpty;
using testing::kFirstRolloutSequence;
using testing::kHostEos;
using testing::kMainSequence;
using testing::StepMetrics;

constexpr int32_t kPrompt = 3;  // FakeHostSpec's prompt length: the branch point's position.

arbor::v1::Metrics Calm() { return StepMetrics(0.1f, 0.1f); }
arbor::v1::Metrics Lehv() { return StepMetrics(2.0f, 6.0f); }

StepResult BranchAt(int32_t position) {
  return testing::StructuralStep(position, arbor::v1::STRATEGY_BRANCH,
                                 {{30, -0.9f}, {31, -1.2f}, {32, -1.6f}, {33, -2.3f}}, Lehv());
}

// The committed generated tokens of `tree`.
std::vector<int32_t> Committed(const SearchTree& tree) { return tree.CommittedTokenIds(); }

class RolloutSearchTest : public ::testing::Test {
 protected:
  // A branch at the tail with the scripted candidates 30..33 (logprobs -0.5, -1, -1.5, -2),
  // handed to a RolloutSearch; rollouts_ keeps a copy of what the strategy starts from.
  void Open(JobSpec spec) {
    host_ = std::make_unique<FakeBranchHost>(std::move(spec));
    host_->ScriptCandidates({{30, -0.5f}, {31, -1.0f}, {32, -1.5f}, {33, -2.0f}});
    absl::StatusOr<std::vector<Rollout>> rollouts = host_->OpenMainBranch(BranchAt(kPrompt));
    ASSERT_TRUE(rollouts.ok()) << rollouts.status();
    ASSERT_EQ(rollouts->size(), 4u);
    rollouts_ = *rollouts;
    search_ = std::make_unique<RolloutSearch>(host_->tree().tail(), *std::move(rollouts));
  }

  // Sends the next Run, which must not commit yet.
  void SendRun() {
    BranchStrategy::Next next = host_->Send(*search_);
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_FALSE(next->has_value()) << "committed instead of sending";
  }

  // A result of `tokens` at the next positions of `sequence`, calm steps.
  arbor::v1::RunResult Ran(uint64_t sequence, std::vector<std::pair<int32_t, float>> tokens,
                           arbor::v1::StopReason stop) {
    return host_->Result(sequence, tokens, stop, Calm());
  }

  // The rollout of sequence 100 + i (candidate 30 + i).
  uint64_t Seq(int i) const { return kFirstRolloutSequence + i; }

  std::unique_ptr<FakeBranchHost> host_;
  std::vector<Rollout> rollouts_;
  std::unique_ptr<RolloutSearch> search_;
};

TEST_F(RolloutSearchTest, EveryRolloutRunsInOneBatchedRun) {
  ASSERT_NO_FATAL_FAILURE(Open(FakeHostSpec(10)));
  ASSERT_NO_FATAL_FAILURE(SendRun());
  ASSERT_EQ(host_->runs().size(), 1u);
  const arbor::v1::RunRequest& request = host_->last_request();
  ASSERT_EQ(request.items_size(), 4) << "branch.width rollouts in ONE Run";
  EXPECT_THAT(host_->runs()[0].ids, ElementsAre(Seq(0), Seq(1), Seq(2), Seq(3)));
  std::vector<uint32_t> branch_ids;
  for (int i = 0; i < 4; ++i) {
    const RunItem& item = request.items(i);
    EXPECT_EQ(item.sequence_id(), Seq(i));
    EXPECT_EQ(item.fork_from(), kMainSequence);
    EXPECT_EQ(item.fork_length(), kPrompt) << "forked at the branch point";
    EXPECT_THAT(item.append(), ElementsAre(30 + i)) << "the candidate";
    EXPECT_EQ(item.max_steps(), 9) << "max_tokens 10 less the candidate";
    EXPECT_EQ(item.branch_id(), rollouts_[i].branch_id);
    EXPECT_EQ(item.branch_depth(), 1);
    EXPECT_TRUE(item.stop_when_calm());
    EXPECT_FALSE(item.stop_on_structural()) << "depth 1 = max_depth: no nested branch";
    EXPECT_EQ(item.generated_before(), 1) << "the candidate counts as generated";
    branch_ids.push_back(item.branch_id());
  }
  std::sort(branch_ids.begin(), branch_ids.end());
  EXPECT_TRUE(std::adjacent_find(branch_ids.begin(), branch_ids.end()) == branch_ids.end())
      << "each rollout draws on its own RNG branch";
  EXPECT_EQ(branch_ids.front(), 1u) << "branch 0 is the main path's";
  ASSERT_EQ(host_->forks().size(), 1u);
  EXPECT_EQ(host_->forks()[0].max_len, 10);
  EXPECT_EQ(host_->CountOf(arbor::v1::STRATEGY_BRANCH), 1);
}

// Calm and a stop token end a rollout, so do its max_len tokens; a rollout the worker stopped
// short of its budget (MAX_STEPS) runs on alone in the next Run, continuing its own sequence.
TEST_F(RolloutSearchTest, OnlyRolloutsWithWorkLeftRunAgain) {
  ASSERT_NO_FATAL_FAILURE(Open(FakeHostSpec(10)));
  ASSERT_NO_FATAL_FAILURE(SendRun());
  RunResponse first;
  *first.add_results() = Ran(Seq(0), {{10, -0.1f}, {11, -0.1f}}, arbor::v1::STOP_REASON_CALM);
  *first.add_results() = Ran(Seq(1), {{12, -0.1f}, {13, -0.1f}}, arbor::v1::STOP_REASON_MAX_STEPS);
  *first.add_results() =
      Ran(Seq(2), {{14, -0.1f}, {kHostEos, -0.1f}}, arbor::v1::STOP_REASON_STOP_TOKEN);
  std::vector<std::pair<int32_t, float>> nine(9, {15, -0.1f});
  *first.add_results() = Ran(Seq(3), nine, arbor::v1::STOP_REASON_MAX_STEPS);
  BranchStrategy::Next next = host_->Answer(*search_, first);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(next->has_value()) << "rollout 101 is not done";
  EXPECT_EQ(host_->CountOf(arbor::v1::STRATEGY_ARGMAX), 15) << "each recorded token counted";
  EXPECT_THAT(host_->ended_traces(), ElementsAre(Seq(0), Seq(2), Seq(3)))
      << "the client's view moves past calm, stopped and spent rollouts only";

  ASSERT_NO_FATAL_FAILURE(SendRun());
  const arbor::v1::RunRequest& second = host_->last_request();
  ASSERT_EQ(second.items_size(), 1) << "calm, stopped and spent rollouts do not run again";
  const RunItem& item = second.items(0);
  EXPECT_EQ(item.sequence_id(), Seq(1));
  EXPECT_TRUE(item.continues());
  EXPECT_FALSE(item.has_fork_from());
  EXPECT_THAT(item.append(), IsEmpty());
  EXPECT_EQ(item.max_steps(), 7) << "10 less the candidate and two tokens";
  EXPECT_EQ(item.generated_before(), 3);

  RunResponse last;
  *last.add_results() = Ran(Seq(1), {{16, -0.1f}}, arbor::v1::STOP_REASON_CALM);
  next = host_->Answer(*search_, last);
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE(next->has_value()) << "every rollout is done";
  EXPECT_THAT(host_->ended_traces(), ElementsAre(Seq(0), Seq(2), Seq(3), Seq(1)));
  EXPECT_THAT((*next)->scores, ::testing::SizeIs(4));
  EXPECT_THAT(host_->release_calls(), IsEmpty()) << "the job releases a top-level branch";
}

// The whole rollout is scored, not its candidate: the third candidate wins on its continuation.
TEST_F(RolloutSearchTest, TheBestScoredRolloutIsCommittedAndTheOthersReleased) {
  ASSERT_NO_FATAL_FAILURE(Open(FakeHostSpec(10)));
  ASSERT_NO_FATAL_FAILURE(SendRun());
  RunResponse response;
  *response.add_results() = Ran(Seq(0), {{10, -3.0f}, {10, -3.0f}}, arbor::v1::STOP_REASON_CALM);
  *response.add_results() = Ran(Seq(1), {{11, -2.0f}, {11, -2.0f}}, arbor::v1::STOP_REASON_CALM);
  *response.add_results() = Ran(Seq(2), {{12, -0.01f}, {13, -0.01f}}, arbor::v1::STOP_REASON_CALM);
  *response.add_results() = Ran(Seq(3), {{14, -1.0f}, {14, -1.0f}}, arbor::v1::STOP_REASON_CALM);
  BranchStrategy::Next next = host_->Answer(*search_, response);
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE(next->has_value());
  const BranchCommit& commit = **next;
  EXPECT_EQ(commit.main_sequence, Seq(2));
  EXPECT_EQ(commit.stop, arbor::v1::STOP_REASON_CALM);
  EXPECT_FALSE(commit.source.fork_from.has_value()) << "the winner's sequence continues as is";
  EXPECT_THAT(commit.source.append, IsEmpty());
  ASSERT_EQ(commit.scores.size(), 4u);
  // Mean logprobs -2.17, -1.67, -0.51, -1.33 (the confidence terms are alike).
  EXPECT_GT(commit.scores[2], commit.scores[3]);
  EXPECT_GT(commit.scores[3], commit.scores[1]);
  EXPECT_GT(commit.scores[1], commit.scores[0]);
  const Node& leaf = host_->tree().node(commit.winner_leaf);
  EXPECT_EQ(leaf.token_id, 13);
  EXPECT_EQ(leaf.sequence_id, Seq(2));
  EXPECT_EQ(host_->tree().node(leaf.parent).parent, rollouts_[2].candidate);
  EXPECT_THAT(search_->Sequences(), ElementsAre(Seq(0), Seq(1), Seq(2), Seq(3)));

  absl::StatusOr<BranchResolution> resolution = host_->CommitBranch(*search_, commit);
  ASSERT_TRUE(resolution.ok()) << resolution.status();
  EXPECT_EQ(resolution->winner_candidate, rollouts_[2].candidate);
  EXPECT_THAT(Committed(host_->tree()), ElementsAre(32, 12, 13));
  EXPECT_EQ(resolution->pruned.pruned_nodes.size(), 9u) << "three losing rollouts of 3 nodes";
  EXPECT_THAT(host_->released(), ElementsAre(Seq(0), Seq(1), Seq(3), kMainSequence));
  EXPECT_TRUE(host_->tree().CheckInvariants().ok());
}

// A candidate that is a stop token is done as it is, but may win: its sequence is only prepared
// on the worker (max_steps 0) so that the main path could continue on it.
TEST_F(RolloutSearchTest, AFinishedCandidateIsPreparedAndMayWin) {
  host_ = std::make_unique<FakeBranchHost>(FakeHostSpec(10));
  host_->ScriptCandidates({{kHostEos, -0.05f}, {31, -1.0f}});
  absl::StatusOr<std::vector<Rollout>> rollouts = host_->OpenMainBranch(BranchAt(kPrompt));
  ASSERT_TRUE(rollouts.ok()) << rollouts.status();
  search_ = std::make_unique<RolloutSearch>(host_->tree().tail(), *std::move(rollouts));
  ASSERT_NO_FATAL_FAILURE(SendRun());
  const arbor::v1::RunRequest& request = host_->last_request();
  ASSERT_EQ(request.items_size(), 2);
  EXPECT_EQ(request.items(0).max_steps(), 0);
  EXPECT_THAT(request.items(0).append(), ElementsAre(kHostEos));
  EXPECT_EQ(request.items(1).max_steps(), 9);

  RunResponse response;
  *response.add_results() = Ran(Seq(0), {}, arbor::v1::STOP_REASON_MAX_STEPS);
  *response.add_results() = Ran(Seq(1), {{10, -2.0f}}, arbor::v1::STOP_REASON_CALM);
  BranchStrategy::Next next = host_->Answer(*search_, response);
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE(next->has_value());
  EXPECT_EQ((*next)->main_sequence, Seq(0));
  EXPECT_EQ((*next)->winner_leaf, host_->forks()[0].candidates[0]);
}

// An INSERT inside a rollout that may branch is no structural edit of the job's path: the rollout
// decodes that one position with structural stops off, then goes on as before.
TEST_F(RolloutSearchTest, AnInsertInsideARolloutTakesOneFallbackStep) {
  JobSpec spec = FakeHostSpec(10);
  spec.policy.branch.max_depth = 2;
  ASSERT_NO_FATAL_FAILURE(Open(std::move(spec)));
  ASSERT_NO_FATAL_FAILURE(SendRun());
  RunResponse response;
  arbor::v1::RunResult& inserted = *response.add_results();
  inserted = Ran(Seq(0), {{10, -0.1f}}, arbor::v1::STOP_REASON_STRUCTURAL);
  *inserted.add_steps() =
      testing::StructuralStep(host_->Length(Seq(0)) + 1, arbor::v1::STRATEGY_INSERT, {}, Lehv());
  for (int i = 1; i < 4; ++i) {
    *response.add_results() = Ran(Seq(i), {{11, -0.1f}}, arbor::v1::STOP_REASON_CALM);
  }
  BranchStrategy::Next next = host_->Answer(*search_, response);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(next->has_value());
  EXPECT_EQ(host_->forks().size(), 1u) << "an INSERT opens no branch";

  ASSERT_NO_FATAL_FAILURE(SendRun());
  ASSERT_EQ(host_->last_request().items_size(), 1);
  EXPECT_EQ(host_->last_request().items(0).max_steps(), 1) << "one fallback step";
  EXPECT_FALSE(host_->last_request().items(0).stop_on_structural());
  RunResponse fallback;
  *fallback.add_results() = Ran(Seq(0), {{12, -0.1f}}, arbor::v1::STOP_REASON_MAX_STEPS);
  next = host_->Answer(*search_, fallback);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(next->has_value()) << "3 of 10 tokens: the rollout goes on";

  ASSERT_NO_FATAL_FAILURE(SendRun());
  ASSERT_EQ(host_->last_request().items_size(), 1);
  EXPECT_EQ(host_->last_request().items(0).max_steps(), 7);
  EXPECT_TRUE(host_->last_request().items(0).stop_on_structural()) << "it may branch again";
}

TEST_F(RolloutSearchTest, AStructuralStopOffTheRolloutsLeafIsAnError) {
  JobSpec spec = FakeHostSpec(10);
  spec.policy.branch.max_depth = 2;
  ASSERT_NO_FATAL_FAILURE(Open(std::move(spec)));
  ASSERT_NO_FATAL_FAILURE(SendRun());
  RunResponse response;
  arbor::v1::RunResult& bad = *response.add_results();
  bad = Ran(Seq(0), {{10, -0.1f}}, arbor::v1::STOP_REASON_STRUCTURAL);
  *bad.add_steps() = BranchAt(host_->Length(Seq(0)) + 3);  // Skips two positions.
  for (int i = 1; i < 4; ++i) {
    *response.add_results() = Ran(Seq(i), {{11, -0.1f}}, arbor::v1::STOP_REASON_CALM);
  }
  BranchStrategy::Next next = host_->Answer(*search_, response);
  EXPECT_EQ(next.status().code(), absl::StatusCode::kInternal);
}

// --- nesting (branch.max_depth 2) -----------------------------------------------------------

class NestedRolloutSearchTest : public RolloutSearchTest {
 protected:
  // Rollout 100 samples 10, then stops on BRANCH at its leaf; the others end calm on two poor
  // tokens. The nested fork draws the scripted 40..43 (logprobs -0.2 .. -0.8).
  void OpenAndBranchInsideRollout0() {
    JobSpec spec = FakeHostSpec(10);
    spec.policy.branch.max_depth = 2;
    ASSERT_NO_FATAL_FAILURE(Open(std::move(spec)));
    host_->ScriptCandidates({{40, -0.2f}, {41, -0.4f}, {42, -0.6f}, {43, -0.8f}});
    ASSERT_NO_FATAL_FAILURE(SendRun());
    for (const RunItem& item : host_->last_request().items()) {
      EXPECT_TRUE(item.stop_on_structural()) << "depth 1 < max_depth 2 may branch again";
    }
    RunResponse response;
    arbor::v1::RunResult& branching = *response.add_results();
    branching = Ran(Seq(0), {{10, -0.1f}}, arbor::v1::STOP_REASON_STRUCTURAL);
    *branching.add_steps() = BranchAt(host_->Length(Seq(0)) + 1);
    for (int i = 1; i < 4; ++i) {
      *response.add_results() =
          Ran(Seq(i), {{11, -2.0f}, {11, -2.0f}}, arbor::v1::STOP_REASON_CALM);
    }
    BranchStrategy::Next next = host_->Answer(*search_, response);
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_FALSE(next->has_value()) << "the nested branch is open";
    ASSERT_EQ(host_->forks().size(), 2u) << "rollout 100 forked";
  }

  // The nested rollouts 104..107.
  uint64_t NestedSeq(int i) const { return Seq(4 + i); }
};

TEST_F(NestedRolloutSearchTest, ARolloutBranchesFromItsOwnSequence) {
  ASSERT_NO_FATAL_FAILURE(OpenAndBranchInsideRollout0());
  ASSERT_EQ(host_->forks().size(), 2u);
  const FakeBranchHost::ForkCall& fork = host_->forks()[1];
  EXPECT_EQ(host_->tree().node(fork.point).token_id, 10) << "opened at the rollout's leaf";
  EXPECT_EQ(fork.position, kPrompt + 2);
  EXPECT_EQ(fork.rng_branch, rollouts_[0].branch_id);
  EXPECT_EQ(fork.base.fork_from, Seq(0));
  EXPECT_EQ(fork.base.fork_length, kPrompt + 2);
  EXPECT_EQ(fork.depth, 2);
  EXPECT_EQ(fork.max_len, 8) << "what the rollout's budget of 10 has left";
  EXPECT_THAT(search_->Sequences(), ElementsAre(Seq(0), NestedSeq(0), NestedSeq(1), NestedSeq(2),
                                                NestedSeq(3), Seq(1), Seq(2), Seq(3)));
  EXPECT_THAT(host_->ended_traces(), Contains(Seq(0))) << "it goes on in its nested rollouts";

  ASSERT_NO_FATAL_FAILURE(SendRun());
  const arbor::v1::RunRequest& request = host_->last_request();
  ASSERT_EQ(request.items_size(), 4) << "only the nested rollouts run; the others are done";
  for (int i = 0; i < 4; ++i) {
    const RunItem& item = request.items(i);
    EXPECT_EQ(item.sequence_id(), NestedSeq(i));
    EXPECT_EQ(item.fork_from(), Seq(0));
    EXPECT_EQ(item.fork_length(), kPrompt + 2);
    EXPECT_THAT(item.append(), ElementsAre(40 + i));
    EXPECT_EQ(item.branch_depth(), 2);
    EXPECT_FALSE(item.stop_on_structural()) << "depth 2 = max_depth";
    EXPECT_EQ(item.max_steps(), 7);
    EXPECT_EQ(item.generated_before(), 3);
  }
}

TEST_F(NestedRolloutSearchTest, TheNestedWinnerContinuesItsRolloutAndLosersAreReleased) {
  ASSERT_NO_FATAL_FAILURE(OpenAndBranchInsideRollout0());
  ASSERT_NO_FATAL_FAILURE(SendRun());
  RunResponse response;
  *response.add_results() = Ran(NestedSeq(0), {{20, -1.0f}}, arbor::v1::STOP_REASON_CALM);
  *response.add_results() = Ran(NestedSeq(1), {{21, -0.05f}}, arbor::v1::STOP_REASON_CALM);
  *response.add_results() = Ran(NestedSeq(2), {{22, -1.0f}}, arbor::v1::STOP_REASON_CALM);
  *response.add_results() = Ran(NestedSeq(3), {{23, -1.0f}}, arbor::v1::STOP_REASON_CALM);
  BranchStrategy::Next next = host_->Answer(*search_, response);
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE(next->has_value()) << "the nested branch resolved, every rollout is done";

  // The nested branch: its rollout's old sequence and the losing nested ones are released.
  ASSERT_THAT(host_->release_calls(), ::testing::SizeIs(1));
  EXPECT_THAT(host_->release_calls()[0],
              ElementsAre(Seq(0), NestedSeq(0), NestedSeq(2), NestedSeq(3)));
  ASSERT_EQ(host_->resolved().size(), 1u);
  const FakeBranchHost::Resolved& nested = host_->resolved()[0];
  EXPECT_EQ(nested.resolution.winner_candidate, host_->forks()[1].candidates[1]);
  EXPECT_THAT(nested.resolution.committed_nodes, IsEmpty()) << "nested: stays explored";
  ASSERT_EQ(nested.scores.size(), 4u);
  EXPECT_EQ(std::max_element(nested.scores.begin(), nested.scores.end()) - nested.scores.begin(),
            1);

  // The outer branch: rollout 0 (30, 10, 41, 21) beats the others' -2 tokens, and the main
  // path continues on the nested winner's sequence.
  const BranchCommit& commit = **next;
  EXPECT_EQ(commit.main_sequence, NestedSeq(1));
  EXPECT_EQ(host_->tree().node(commit.winner_leaf).token_id, 21);
  EXPECT_EQ(std::max_element(commit.scores.begin(), commit.scores.end()) - commit.scores.begin(),
            0);
  EXPECT_THAT(search_->Sequences(), ElementsAre(NestedSeq(1), Seq(1), Seq(2), Seq(3)));
  absl::StatusOr<BranchResolution> resolution = host_->CommitBranch(*search_, commit);
  ASSERT_TRUE(resolution.ok()) << resolution.status();
  EXPECT_THAT(Committed(host_->tree()), ElementsAre(30, 10, 41, 21));
  const absl::Span<const NodeId> path = host_->tree().committed_path();
  EXPECT_EQ(host_->tree().node(path[3]).branch_depth, 2) << "the nested candidate, committed";
  EXPECT_TRUE(host_->tree().open_branches().empty());
  EXPECT_TRUE(host_->tree().CheckInvariants().ok());
}

}  // namespace
}  // namespace arbor::coordinator
