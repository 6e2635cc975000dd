// The job driver's BRANCH strategy against a worker scripted by metrics (scripted_worker.h):
// ROLLOUT (all children rolled out in one batched Run, the best committed, the rest released),
// nested branches up to max_depth, BEAM, and reproducibility of the trees they build.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "coordinator/job/job.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/job/job_harness.h"

namespace arbor::coordinator {
namespace {

using testing::Adaptive;
using testing::BaseSpec;
using testing::ByPosition;
using testing::ExpectCleanFinish;
using testing::Harness;
using testing::Hehv;
using testing::Helv;
using testing::kSeed;
using testing::Lehv;
using testing::Lelv;
using testing::RunToTree;
using testing::Script;
using testing::ScriptInput;
using testing::Spread;

TEST(JobTest, BranchRollsAllChildrenOutInOneRunAndCommitsTheBest) {
  Harness h(ByPosition({{3, Lehv(Spread(30, 6))}}));
  auto job = h.Make(BaseSpec(10));
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  const auto requests = h.worker->requests();
  ASSERT_GE(requests.size(), 2u);
  const uint64_t main = requests[0].items(0).sequence_id();
  const arbor::v1::RunRequest& rollout = requests[1];
  ASSERT_EQ(rollout.items_size(), 4) << "branch.width children in ONE Run";
  std::set<uint32_t> branch_ids;
  std::set<int32_t> candidates;
  for (const arbor::v1::RunItem& item : rollout.items()) {
    EXPECT_EQ(item.fork_from(), main);
    EXPECT_EQ(item.fork_length(), 3);
    ASSERT_EQ(item.append_size(), 1);
    candidates.insert(item.append(0));
    EXPECT_TRUE(item.stop_when_calm());
    EXPECT_FALSE(item.stop_on_structural());
    EXPECT_EQ(item.branch_depth(), 1);
    EXPECT_EQ(item.max_steps(), 9) << "max_tokens left, minus the candidate";
    branch_ids.insert(item.branch_id());
  }
  EXPECT_EQ(candidates.size(), 4u) << "distinct candidates";
  EXPECT_EQ(branch_ids.size(), 4u) << "distinct RNG branches";
  EXPECT_EQ(branch_ids.count(0), 0u);

  const auto resolved = h.Of(arbor::v1::GenerateEvent::kBranchResolved);
  ASSERT_EQ(resolved.size(), 1u);
  const arbor::v1::BranchResolved& r = resolved[0].branch_resolved();
  const auto best = std::max_element(r.scores().begin(), r.scores().end());
  EXPECT_EQ(r.winner_node_id(), r.candidate_node_ids(best - r.scores().begin()));
  EXPECT_EQ(r.committed_tokens(), 3) << "candidate + two calm steps";
  // Losers and the old main sequence were released; the winner carried on as the main path.
  const uint64_t winner = rollout.items(best - r.scores().begin()).sequence_id();
  const auto released = h.worker->released();
  EXPECT_TRUE(std::find(released.begin(), released.end(), main) != released.end());
  for (const arbor::v1::RunItem& item : rollout.items()) {
    if (item.sequence_id() == winner) continue;
    EXPECT_TRUE(std::find(released.begin(), released.end(), item.sequence_id()) != released.end());
  }
  EXPECT_EQ(requests[2].items(0).sequence_id(), winner);
  job->ReadTree([&](const SearchTree& tree) {
    EXPECT_EQ(tree.node(r.winner_node_id()).status, arbor::v1::NODE_STATUS_COMMITTED);
    EXPECT_EQ(tree.CountStatus(arbor::v1::NODE_STATUS_PRUNED), 9);
  });
  EXPECT_EQ(job->usage().explored_tokens(), 9);
  ExpectCleanFinish(*job, *h.worker);
}

// The worker's KV cache holds 3 sequences: a fork of branch.width 4 beside the main one cannot
// fit, and waiting would not help (the job's own rollouts are what fills it). The job abandons
// that branch, samples the position instead, and forks the next one at half the width.
TEST(JobTest, ABranchTheWorkerCannotHoldIsAbandonedAndLaterForksAreNarrower) {
  Harness h(ByPosition({{3, Lehv(Spread(30, 6))}, {6, Lehv(Spread(40, 6))}}));
  h.worker->SetMaxSequences(3);
  h.timed = true;  // A job that waited for KV would queue a timer: none may be queued.
  auto job = h.Make(BaseSpec(10));
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_TRUE(h.timers.empty()) << "the job waited for KV its own rollouts held";
  const auto opened = h.Of(arbor::v1::GenerateEvent::kBranchOpened);
  const auto resolved = h.Of(arbor::v1::GenerateEvent::kBranchResolved);
  ASSERT_EQ(opened.size(), 2u);
  ASSERT_EQ(resolved.size(), 2u);
  EXPECT_EQ(opened[0].branch_opened().candidates_size(), 4);
  const arbor::v1::BranchResolved& abandoned = resolved[0].branch_resolved();
  EXPECT_EQ(abandoned.winner_node_id(), -1);
  EXPECT_EQ(abandoned.committed_tokens(), 0);
  EXPECT_EQ(abandoned.pruned_node_ids_size(), 4);
  EXPECT_THAT(abandoned.reason(), ::testing::HasSubstr("later forks take at most 2"));
  EXPECT_EQ(opened[1].branch_opened().candidates_size(), 2);
  EXPECT_GE(resolved[1].branch_resolved().winner_node_id(), 0);
  job->ReadTree([&](const SearchTree& tree) {
    // Position 3 was sampled on the main path (the fallback of its LEHV row).
    EXPECT_EQ(tree.node(tree.committed_path()[1]).strategy,
              arbor::v1::STRATEGY_BRANCH_SAMPLE);
  });
  ExpectCleanFinish(*job, *h.worker);
}

// A worker that holds only the main sequence: each fork is abandoned, the second time for good,
// after which the main path claims the deepest branch depth so the worker never stops to fork.
TEST(JobTest, AJobWhoseForksNeverFitStopsBranching) {
  Harness h([](const ScriptInput&) { return Lehv(Spread(30, 6)); });
  h.worker->SetMaxSequences(1);
  auto job = h.Make(BaseSpec(12));
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  const auto resolved = h.Of(arbor::v1::GenerateEvent::kBranchResolved);
  ASSERT_EQ(resolved.size(), 2u);
  EXPECT_THAT(resolved[1].branch_resolved().reason(),
              ::testing::HasSubstr("the job goes on without branching"));
  const auto requests = h.worker->requests();
  const arbor::v1::RunItem& last = requests.back().items(0);
  EXPECT_EQ(last.branch_depth(), entropix::PolicyConfig().MaxForkDepth());
  EXPECT_EQ(job->usage().generated_tokens(), 12);
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, NestedBranchesStopAtMaxDepth) {
  // LEHV everywhere: the main path branches, its children (depth 1 = max_depth) sample instead.
  Harness h([](const ScriptInput&) { return Lehv(Spread(30, 6)); });
  JobSpec spec = BaseSpec(12);
  spec.policy.branch.max_len = 4;
  auto job = h.Make(spec);
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  // Every fork comes from the main path (the single item of the run before), never from a
  // rollout child.
  const auto requests = h.worker->requests();
  for (size_t r = 1; r < requests.size(); ++r) {
    for (const auto& item : requests[r].items()) {
      if (!item.has_fork_from()) continue;
      ASSERT_EQ(requests[r - 1].items_size(), 1);
      EXPECT_EQ(item.fork_from(), requests[r - 1].items(0).sequence_id());
      EXPECT_EQ(item.branch_depth(), 1);
    }
  }
  EXPECT_GT(job->strategy_counts().branch_sample(), 0);
  EXPECT_EQ(job->strategy_counts().branch(), 3) << "12 tokens in rollouts of 4";
  ExpectCleanFinish(*job, *h.worker);
}

// Main path branches at 3; its rollouts (depth 1) branch again at 5, the nested rollouts
// (depth 2) are calm at 6 and 7.
Script NestedScript() {
  return [](const ScriptInput& in) {
    if (in.branch_depth == 0 && in.position == 3) return Lehv(Spread(30, 6));
    if (in.branch_depth == 1 && in.position == 5) return Lehv(Spread(40, 6));
    return Lelv({{10, 0.9}, {11, 0.1}});
  };
}

JobSpec NestedSpec() {
  JobSpec spec = BaseSpec(10);
  spec.policy.branch.max_depth = 2;
  return spec;
}

TEST(JobTest, MaxDepthTwoNestsABranchInsideARollout) {
  Harness h(NestedScript());
  auto job = h.Make(NestedSpec());
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  const auto requests = h.worker->requests();
  ASSERT_GE(requests.size(), 4u);
  const arbor::v1::RunRequest& outer = requests[1];
  ASSERT_EQ(outer.items_size(), 4);
  std::set<uint64_t> outer_ids;
  for (const arbor::v1::RunItem& item : outer.items()) {
    EXPECT_EQ(item.branch_depth(), 1);
    EXPECT_TRUE(item.stop_on_structural()) << "depth 1 < max_depth 2 may branch again";
    EXPECT_EQ(item.max_steps(), 9);
    outer_ids.insert(item.sequence_id());
  }
  // Every rollout stopped on BRANCH at 5: all nested candidates are forked in ONE Run.
  const arbor::v1::RunRequest& nested = requests[2];
  ASSERT_EQ(nested.items_size(), 16) << "4 nested branches of branch.width 4";
  std::map<uint64_t, std::set<int32_t>> candidates_of;
  for (const arbor::v1::RunItem& item : nested.items()) {
    EXPECT_TRUE(outer_ids.count(item.fork_from())) << "forked from a rollout's sequence";
    EXPECT_EQ(item.fork_length(), 5);
    ASSERT_EQ(item.append_size(), 1);
    candidates_of[item.fork_from()].insert(item.append(0));
    EXPECT_EQ(item.branch_depth(), 2);
    EXPECT_FALSE(item.stop_on_structural()) << "depth 2 = max_depth";
    EXPECT_EQ(item.max_steps(), 7) << "the outer budget of 10 less its 2 tokens and the candidate";
  }
  EXPECT_EQ(candidates_of.size(), 4u);
  for (const auto& [from, tokens] : candidates_of) EXPECT_EQ(tokens.size(), 4u);

  const auto opened = h.Of(arbor::v1::GenerateEvent::kBranchOpened);
  ASSERT_EQ(opened.size(), 5u);
  std::set<int32_t> outer_candidates;
  for (const auto& c : opened[0].branch_opened().candidates()) outer_candidates.insert(c.node_id());
  const auto resolved = h.Of(arbor::v1::GenerateEvent::kBranchResolved);
  ASSERT_EQ(resolved.size(), 5u);
  for (size_t i = 0; i + 1 < resolved.size(); ++i) {
    EXPECT_EQ(resolved[i].branch_resolved().committed_tokens(), 0) << "nested: stays explored";
    EXPECT_FALSE(outer_candidates.count(resolved[i].branch_resolved().winner_node_id()));
  }
  const arbor::v1::BranchResolved& last = resolved.back().branch_resolved();
  EXPECT_TRUE(outer_candidates.count(last.winner_node_id())) << "the outer branch resolves last";
  EXPECT_EQ(last.committed_tokens(), 5) << "candidate, 4, nested candidate, 6, 7";
  EXPECT_EQ(job->strategy_counts().branch(), 5);
  job->ReadTree([&](const SearchTree& tree) {
    EXPECT_TRUE(tree.open_branches().empty());
    const absl::Span<const NodeId> path = tree.committed_path();
    ASSERT_GE(path.size(), 6u);
    EXPECT_EQ(tree.node(path[3]).branch_depth, 2) << "the nested candidate, committed";
    EXPECT_EQ(tree.node(path[3]).token_id / 10, 4);
  });
  ExpectCleanFinish(*job, *h.worker);
  EXPECT_EQ(requests.back().items_size(), 1) << "the winner carries on as the main path";
}

TEST(JobTest, InsertAndBackspaceInsideRolloutsStayFallbackSamples) {
  Harness h([](const ScriptInput& in) {
    if (in.branch_depth == 0 && in.position == 3) return Lehv(Spread(30, 6));
    if (in.branch_depth == 1 && in.position == 5) return Helv(Spread(40, 6));
    if (in.branch_depth == 1 && in.position == 6) return Hehv(Spread(40, 6));
    return Lelv({{10, 0.9}, {11, 0.1}});
  });
  auto job = h.Make(NestedSpec());
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  const auto requests = h.worker->requests();
  ASSERT_GE(requests.size(), 6u);
  // INSERT at 5, then BACKSPACE at 6: each costs the rollouts one fallback step, after which
  // they go on with structural stops (they may still branch).
  // Steps left of the 10: candidate and 4 spent, then 5 too, then 6 too.
  const std::map<int, int32_t> max_steps = {{2, 1}, {3, 7}, {4, 1}, {5, 6}};
  for (const auto& [r, steps] : max_steps) {
    ASSERT_EQ(requests[r].items_size(), 4);
    const bool fallback = steps == 1;
    for (const arbor::v1::RunItem& item : requests[r].items()) {
      EXPECT_FALSE(item.has_fork_from()) << "the rollout continues";
      EXPECT_EQ(item.max_steps(), steps);
      EXPECT_EQ(item.stop_on_structural(), !fallback);
    }
  }
  EXPECT_EQ(job->strategy_counts().insert(), 0);
  EXPECT_EQ(job->strategy_counts().backspace(), 0);
  EXPECT_EQ(job->strategy_counts().hot_sample(), 4);
  EXPECT_EQ(job->strategy_counts().resample(), 4);
  EXPECT_EQ(h.Of(arbor::v1::GenerateEvent::kBranchOpened).size(), 1u);
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, NestedBranchesSameSeedGiveTheSameTree) {
  auto run = [](uint64_t seed) {
    JobSpec spec = NestedSpec();
    spec.seed = seed;
    return RunToTree(NestedScript(), spec);
  };
  EXPECT_EQ(run(kSeed), run(kSeed));
  EXPECT_EQ(run(7), run(7));
  EXPECT_GT(run(kSeed).size(), 40u) << "nested rollouts are in the tree";
}

JobSpec BeamSpec(int32_t max_tokens) {
  JobSpec spec = BaseSpec(max_tokens);
  spec.policy.branch.mode = entropix::BranchMode::kBeam;
  spec.policy.branch.width = 3;
  spec.policy.branch.max_len = 4;
  spec.policy.branch.calm_steps = 4;  // The adaptive steps below are calm: end on max_len.
  return spec;
}

// Beams branch at position 3, then every step is uncertain (adaptive) over three tokens whose
// probabilities depend on the branch's RNG-free path, so beams fork and get pruned.
Script BeamScript() {
  return [](const ScriptInput& in) {
    if (in.position == 3) return Lehv(Spread(30, 6));
    if (in.position > 3 && in.position < 7) {
      const int32_t last = in.tokens.back();
      return Adaptive({{40 + last % 4, 0.5}, {44 + last % 3, 0.3}, {50, 0.2}});
    }
    return Lelv({{10, 1.0}});
  };
}

TEST(JobTest, BeamStepsBatchSiblingsAndCommitTheBest) {
  Harness h(BeamScript());
  auto job = h.Make(BeamSpec(10));
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  const auto requests = h.worker->requests();
  ASSERT_GE(requests.size(), 5u);
  // Steps 1..3 of the beam: one Run each, every live beam in it, one decode step each.
  for (size_t r = 1; r <= 3; ++r) {
    EXPECT_EQ(requests[r].items_size(), 3) << "width beams in ONE Run, step " << r;
    for (const auto& item : requests[r].items()) {
      EXPECT_EQ(item.max_steps(), 1);
      EXPECT_GE(item.top_k(), 3);
      EXPECT_EQ(item.branch_depth(), 1);
    }
  }
  bool forked_from_a_beam = false;
  for (size_t r = 2; r <= 3; ++r) {
    for (const auto& item : requests[r].items()) {
      forked_from_a_beam |= item.has_fork_from();
    }
  }
  EXPECT_TRUE(forked_from_a_beam) << "a beam kept with several tokens forks";
  const auto resolved = h.Of(arbor::v1::GenerateEvent::kBranchResolved);
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(resolved[0].branch_resolved().committed_tokens(), 4) << "max_len";
  EXPECT_EQ(resolved[0].branch_resolved().candidate_node_ids_size(), 3);
  job->ReadTree([&](const SearchTree& tree) {
    EXPECT_GT(tree.CountStatus(arbor::v1::NODE_STATUS_PRUNED), 0);
    EXPECT_EQ(tree.node(resolved[0].branch_resolved().winner_node_id()).status,
              arbor::v1::NODE_STATUS_COMMITTED);
  });
  EXPECT_EQ(job->token_ids().size(), 10u);
  EXPECT_FALSE(h.worker->released().empty()) << "dropped beams and losers released";
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, BeamCommitsTheBestScoredBeam) {
  // After the branch, tokens 30.. lead to a calm continuation; the first candidate (30, most
  // likely) then has a certain token, the others an uncertain one.
  Harness h([](const ScriptInput& in) {
    if (in.position == 3) return Lehv(Spread(30, 6));
    if (in.position == 4) {
      return in.tokens.back() == 30 ? Lelv({{20, 1.0}}) : Lelv({{21, 0.4}, {22, 0.35}, {23, 0.25}});
    }
    return Lelv({{10, 1.0}});
  });
  auto job = h.Make(BeamSpec(8));
  job->Start();
  ASSERT_EQ(job->state(), arbor::v1::JOB_STATE_FINISHED) << job->error();
  EXPECT_EQ(job->token_ids()[0], 30);
  EXPECT_EQ(job->token_ids()[1], 20);
  ExpectCleanFinish(*job, *h.worker);
}

TEST(JobTest, BeamSameSeedGivesTheSameTree) {
  auto run = [](uint64_t seed) {
    JobSpec spec = BeamSpec(12);
    spec.seed = seed;
    return RunToTree(BeamScript(), spec);
  };
  EXPECT_EQ(run(kSeed), run(kSeed));
  EXPECT_EQ(run(3), run(3));
}

}  // namespace
}  // namespace arbor::coordinator
