// The search tree: every operation, every refusal (which must leave the tree unchanged), the
// backspace rules, branch resolution in ROLLOUT, BEAM and nested shapes, and invariants plus an
// independent model of the committed path after long random operation sequences.
#include "coordinator/tree/search_tree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "tests/support/test_seed.h"

namespace arbor::coordinator {
namespace {

constexpr int32_t kVocab = 3000;

Step MakeStep(int32_t token, v1::Strategy strategy = v1::STRATEGY_ARGMAX, uint64_t seq = 1,
              float entropy = 0.05f, float varentropy = 0.02f) {
  Step step;
  step.token_id = token;
  step.logprob = -0.25f;
  step.strategy = strategy;
  step.sequence_id = seq;
  step.metrics.set_entropy(entropy);
  step.metrics.set_varentropy(varentropy);
  return step;
}

SearchTree MakeTree(std::vector<int32_t> prompt = {1, 2, 3}, uint64_t seq = 1) {
  absl::StatusOr<SearchTree> tree = SearchTree::Create(prompt, kVocab, seq);
  EXPECT_TRUE(tree.ok()) << tree.status();
  return *std::move(tree);
}

// A refusal must not change anything: compare sizes, path and counters before and after.
struct Snapshot {
  explicit Snapshot(const SearchTree& t)
      : size(t.size()),
        path(t.committed_path().begin(), t.committed_path().end()),
        explored(t.ExploredTokenCount()),
        open(t.open_branches().size()) {}
  bool operator==(const Snapshot&) const = default;
  int32_t size;
  std::vector<NodeId> path;
  int32_t explored;
  size_t open;
};

TEST(SearchTree, CreateValidatesPromptAndVocab) {
  EXPECT_EQ(SearchTree::Create({}, kVocab, 0).status().code(), absl::StatusCode::kInvalidArgument);
  const absl::Status out_of_vocab = SearchTree::Create({1, kVocab}, kVocab, 0).status();
  EXPECT_EQ(out_of_vocab.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out_of_vocab.message().find("prompt_token_ids[1]"), std::string::npos);
  EXPECT_FALSE(SearchTree::Create({-1}, kVocab, 0).ok());
  EXPECT_FALSE(SearchTree::Create({1}, 0, 0).ok());
}

TEST(SearchTree, PromptNodeAndEmptyPath) {
  SearchTree tree = MakeTree({7, 8, 9, 10}, 42);
  const Node& root = tree.node(kPromptNode);
  EXPECT_EQ(root.status, v1::NODE_STATUS_PROMPT);
  EXPECT_EQ(root.parent, kNoNode);
  EXPECT_EQ(root.token_id, -1);
  EXPECT_EQ(root.position, 3);
  EXPECT_EQ(root.sequence_id, 42u);
  EXPECT_EQ(tree.tail(), kPromptNode);
  EXPECT_EQ(tree.NextPosition(), 4);
  EXPECT_TRUE(tree.CommittedTokenIds().empty());
  EXPECT_EQ(tree.SequenceTokenIds(), (std::vector<int32_t>{7, 8, 9, 10}));
  EXPECT_EQ(tree.GeneratedTokenCount(), 0);
  EXPECT_EQ(tree.CountStatus(v1::NODE_STATUS_PROMPT), 1);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(SearchTree, CommitAndInsertExtendTheCommittedPath) {
  SearchTree tree = MakeTree();
  Step step = MakeStep(11, v1::STRATEGY_ADAPTIVE);
  step.top_logprobs = {{11, -0.25f}, {12, -1.5f}};
  const NodeId a = *tree.Commit(step);
  const NodeId b = *tree.Insert(MakeStep(2564, v1::STRATEGY_INSERT));
  const NodeId c = *tree.Commit(MakeStep(13));
  EXPECT_EQ(tree.committed_path(), (std::vector<NodeId>{0, a, b, c}));
  EXPECT_EQ(tree.node(a).position, 3);
  EXPECT_EQ(tree.node(c).position, 5);
  EXPECT_EQ(tree.node(b).status, v1::NODE_STATUS_INSERTED);
  EXPECT_EQ(tree.node(a).strategy, v1::STRATEGY_ADAPTIVE);
  EXPECT_EQ(tree.node(a).parent, kPromptNode);
  EXPECT_EQ(tree.Children(kPromptNode), std::vector<NodeId>{a});
  ASSERT_EQ(tree.TopLogprobs(a).size(), 2u);
  EXPECT_EQ(tree.TopLogprobs(a)[1].token_id, 12);
  EXPECT_TRUE(tree.TopLogprobs(b).empty());
  EXPECT_EQ(tree.CommittedTokenIds(), (std::vector<int32_t>{11, 2564, 13}));
  EXPECT_EQ(tree.SequenceTokenIds(), (std::vector<int32_t>{1, 2, 3, 11, 2564, 13}));
  EXPECT_EQ(tree.CountStatus(v1::NODE_STATUS_COMMITTED), 2);
  EXPECT_EQ(tree.CountStatus(v1::NODE_STATUS_INSERTED), 1);
  EXPECT_EQ(tree.CountStrategy(v1::STRATEGY_INSERT), 1);
  EXPECT_EQ(tree.CountStrategy(v1::STRATEGY_FORCED), 1);  // The prompt.
  EXPECT_EQ(tree.GeneratedTokenCount(), 3);
  EXPECT_EQ(tree.ExploredTokenCount(), 0);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(SearchTree, BadStepsAreRefusedWithoutChange) {
  SearchTree tree = MakeTree();
  ASSERT_TRUE(tree.Commit(MakeStep(5)).ok());
  const Snapshot before(tree);
  std::vector<std::pair<Step, std::string>> bad;
  bad.push_back({MakeStep(kVocab), "token_id"});
  bad.push_back({MakeStep(-3), "token_id"});
  Step positive = MakeStep(5);
  positive.logprob = 0.5f;
  bad.push_back({positive, "logprob"});
  Step nan = MakeStep(5);
  nan.logprob = std::nanf("");
  bad.push_back({nan, "logprob"});
  bad.push_back({MakeStep(5, v1::STRATEGY_UNSPECIFIED), "strategy"});
  Step inf_metric = MakeStep(5);
  inf_metric.metrics.set_agreement(std::numeric_limits<float>::infinity());
  bad.push_back({inf_metric, "metrics"});
  Step bad_alt = MakeStep(5);
  bad_alt.top_logprobs = {{kVocab + 1, -1.0f}};
  bad.push_back({bad_alt, "top_logprobs[0]"});
  for (const auto& [step, field] : bad) {
    const absl::Status commit = tree.Commit(step).status();
    EXPECT_EQ(commit.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(commit.message().find(field), std::string::npos) << commit;
    EXPECT_FALSE(tree.Insert(step).ok()) << field;
    EXPECT_FALSE(tree.OpenBranch(tree.tail(), {step}).ok()) << field;
  }
  EXPECT_TRUE(Snapshot(tree) == before);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(SearchTree, BackspaceRules) {
  SearchTree tree = MakeTree();
  EXPECT_EQ(tree.Backspace().status().code(), absl::StatusCode::kFailedPrecondition);  // Prompt.
  const NodeId ins = *tree.Insert(MakeStep(2564, v1::STRATEGY_INSERT));
  EXPECT_EQ(tree.Backspace().status().code(), absl::StatusCode::kFailedPrecondition);  // Inserted.
  const NodeId a = *tree.Commit(MakeStep(20));
  const NodeId b = *tree.Commit(MakeStep(21));
  EXPECT_EQ(*tree.Backspace(), b);
  EXPECT_EQ(tree.node(b).status, v1::NODE_STATUS_BACKSPACED);
  EXPECT_EQ(tree.tail(), a);
  EXPECT_TRUE(tree.WasBackspaced(tree.node(b).position));
  EXPECT_EQ(tree.ExploredTokenCount(), 1);
  // The re-draw takes the same position beside the removed node.
  const NodeId b2 = *tree.Commit(MakeStep(22, v1::STRATEGY_RESAMPLE));
  EXPECT_EQ(tree.node(b2).position, tree.node(b).position);
  EXPECT_EQ(tree.Children(a), (std::vector<NodeId>{b, b2}));
  // Once per position.
  const Snapshot before(tree);
  const absl::Status again = tree.Backspace().status();
  EXPECT_EQ(again.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("already backspaced"), std::string::npos);
  EXPECT_TRUE(Snapshot(tree) == before);
  // An earlier position still may go, then the inserted token stops it.
  const NodeId c = *tree.Commit(MakeStep(23));
  EXPECT_EQ(*tree.Backspace(), c);
  EXPECT_EQ(tree.Backspace().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tree.tail(), b2);
  EXPECT_EQ(tree.CommittedTokenIds(), (std::vector<int32_t>{2564, 20, 22}));
  EXPECT_EQ(tree.node(ins).status, v1::NODE_STATUS_INSERTED);
  EXPECT_EQ(tree.CountStatus(v1::NODE_STATUS_BACKSPACED), 2);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(SearchTree, BackspacingAPositionTwoStepsBackIsAllowedOnce) {
  SearchTree tree = MakeTree();
  const NodeId a = *tree.Commit(MakeStep(30));
  const NodeId b = *tree.Commit(MakeStep(31));
  EXPECT_EQ(*tree.Backspace(), b);
  EXPECT_EQ(*tree.Backspace(), a);
  EXPECT_EQ(tree.tail(), kPromptNode);
  const NodeId a2 = *tree.Commit(MakeStep(32));
  EXPECT_FALSE(tree.Backspace().ok());  // Position of `a` was backspaced.
  const NodeId b2 = *tree.Commit(MakeStep(33));
  EXPECT_FALSE(tree.Backspace().ok());  // So was the position of `b`.
  EXPECT_EQ(tree.committed_path(), (std::vector<NodeId>{0, a2, b2}));
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(SearchTree, RolloutBranchCommitsTheWinnerAndPrunesTheRest) {
  SearchTree tree = MakeTree({1, 2}, /*seq=*/10);
  const NodeId base = *tree.Commit(MakeStep(40, v1::STRATEGY_ARGMAX, 10));
  std::vector<Step> candidates = {MakeStep(50, v1::STRATEGY_BRANCH, 11),
                                  MakeStep(51, v1::STRATEGY_BRANCH, 12),
                                  MakeStep(52, v1::STRATEGY_BRANCH, 13)};
  const std::vector<NodeId> kids = *tree.OpenBranch(base, candidates);
  ASSERT_EQ(kids.size(), 3u);
  EXPECT_EQ(tree.OpenBranchOf(kids[1]), base);
  for (NodeId k : kids) {
    EXPECT_EQ(tree.node(k).status, v1::NODE_STATUS_EXPLORED);
    EXPECT_EQ(tree.node(k).branch_depth, 1);
    EXPECT_TRUE(tree.node(k).is_candidate);
  }
  EXPECT_TRUE(tree.CheckInvariants().ok());
  // The committed path is frozen while the branch is open.
  EXPECT_EQ(tree.Commit(MakeStep(60)).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tree.Insert(MakeStep(60)).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tree.Backspace().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(tree.OpenBranch(base, {MakeStep(70)}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // Roll each child out on its own sequence.
  std::vector<NodeId> leaves = kids;
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (i == 2 && step > 0) continue;  // Child 2 stopped early.
      leaves[i] =
          *tree.ExtendRollout(leaves[i], MakeStep(100 + step, v1::STRATEGY_ADAPTIVE, 11 + i));
      EXPECT_EQ(tree.node(leaves[i]).branch_depth, 1);
    }
  }
  EXPECT_TRUE(tree.CheckInvariants().ok());
  const Snapshot before(tree);
  EXPECT_FALSE(tree.ResolveBranch(base, kids[0], {}).ok());        // Not a leaf.
  EXPECT_FALSE(tree.ResolveBranch(base, leaves[1], {1.0f}).ok());  // Score count.
  EXPECT_FALSE(tree.ResolveBranch(base, leaves[1], {1.0f, std::nanf(""), 0.0f}).ok());
  EXPECT_FALSE(tree.ResolveBranch(kids[0], leaves[1], {}).ok());  // Not a branch point.
  EXPECT_TRUE(Snapshot(tree) == before);

  const BranchResolution r = *tree.ResolveBranch(base, leaves[1], {-1.5f, -0.5f, -2.0f});
  EXPECT_EQ(r.winner_candidate, kids[1]);
  EXPECT_EQ(r.candidates, kids);
  EXPECT_EQ(r.committed_nodes.size(), 4u);
  EXPECT_EQ(r.committed_nodes.front(), kids[1]);
  EXPECT_EQ(r.committed_nodes.back(), leaves[1]);
  EXPECT_EQ(r.pruned.pruned_nodes.size(), 4u + 2u);  // Child 0 (1 + 3) and child 2 (1 + 1).
  EXPECT_TRUE(std::is_sorted(r.pruned.pruned_nodes.begin(), r.pruned.pruned_nodes.end()));
  EXPECT_EQ(r.pruned.released_sequences, (std::vector<uint64_t>{10, 11, 13}));
  EXPECT_EQ(tree.tail(), leaves[1]);
  EXPECT_EQ(tree.CommittedTokenIds(), (std::vector<int32_t>{40, 51, 100, 101, 102}));
  EXPECT_EQ(tree.node(kids[0]).branch_score, -1.5f);
  EXPECT_TRUE(tree.node(kids[2]).has_branch_score);
  EXPECT_EQ(tree.node(leaves[0]).status, v1::NODE_STATUS_PRUNED);
  EXPECT_EQ(tree.ExploredTokenCount(), 6);
  EXPECT_TRUE(tree.open_branches().empty());
  EXPECT_FALSE(tree.node(base).branch_open);
  EXPECT_TRUE(tree.node(base).is_branch_point);
  // Afterwards the job goes on from the winner, and the winner's tokens can be backspaced.
  EXPECT_TRUE(tree.Commit(MakeStep(103, v1::STRATEGY_ARGMAX, 12)).ok());
  EXPECT_TRUE(tree.Backspace().ok());
  EXPECT_EQ(*tree.Backspace(), leaves[1]);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(SearchTree, BranchRefusals) {
  SearchTree tree = MakeTree();
  const NodeId a = *tree.Commit(MakeStep(40));
  const NodeId b = *tree.Commit(MakeStep(41));
  EXPECT_EQ(tree.OpenBranch(a, {MakeStep(50)}).status().code(),
            absl::StatusCode::kFailedPrecondition);  // Not the tail.
  EXPECT_EQ(tree.OpenBranch(b, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tree.OpenBranch(999, {MakeStep(50)}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tree.OpenBranch(b, {MakeStep(50), MakeStep(50)}).status().code(),
            absl::StatusCode::kInvalidArgument);           // Duplicate candidates.
  EXPECT_FALSE(tree.ExtendRollout(b, MakeStep(50)).ok());  // Committed node.
  EXPECT_FALSE(tree.PruneRollout(b).ok());
  EXPECT_FALSE(tree.ResolveBranch(b, b, {}).ok());
  const std::vector<NodeId> kids = *tree.OpenBranch(b, {MakeStep(50), MakeStep(51)});
  EXPECT_FALSE(tree.ExtendRollout(b, MakeStep(52)).ok());  // The branch point itself.
  const NodeId x = *tree.ExtendRollout(kids[0], MakeStep(60));
  EXPECT_FALSE(tree.ExtendRollout(kids[0], MakeStep(60)).ok());  // Same token twice.
  EXPECT_FALSE(tree.OpenBranch(kids[0], {MakeStep(70)}).ok());   // Not a leaf.
  EXPECT_FALSE(tree.ResolveBranch(b, 12345, {}).ok());
  // Resolving prunes kids[1]; pruned nodes accept nothing more.
  ASSERT_TRUE(tree.ResolveBranch(b, x, {}).ok());
  EXPECT_FALSE(tree.ExtendRollout(kids[1], MakeStep(61)).ok());
  EXPECT_FALSE(tree.PruneRollout(kids[1]).ok());
  EXPECT_FALSE(tree.OpenBranch(kids[1], {MakeStep(61)}).ok());
  EXPECT_FALSE(tree.ResolveBranch(b, x, {}).ok());  // Already resolved.
  // A second branch at the same point, after backspacing back to it, is a new branch.
  ASSERT_TRUE(tree.Backspace().ok());
  ASSERT_TRUE(tree.Backspace().ok());
  EXPECT_EQ(tree.tail(), b);
  const std::vector<NodeId> again = *tree.OpenBranch(b, {MakeStep(80), MakeStep(81)});
  const BranchResolution r = *tree.ResolveBranch(b, again[0], {0.5f, 0.25f});
  EXPECT_EQ(r.candidates, again);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(SearchTree, BeamForksAndPrunesMidway) {
  SearchTree tree = MakeTree({1}, 1);
  const NodeId base = *tree.Commit(MakeStep(9, v1::STRATEGY_ARGMAX, 1));
  const std::vector<NodeId> kids = *tree.OpenBranch(
      base, {MakeStep(10, v1::STRATEGY_BRANCH, 2), MakeStep(11, v1::STRATEGY_BRANCH, 3)});
  // Step 1: child 0 forks into two beams (one continues on seq 2, one on a new seq 4).
  const NodeId a1 = *tree.ExtendRollout(kids[0], MakeStep(20, v1::STRATEGY_ADAPTIVE, 2));
  const NodeId a2 = *tree.ExtendRollout(kids[0], MakeStep(21, v1::STRATEGY_ADAPTIVE, 4));
  const NodeId b1 = *tree.ExtendRollout(kids[1], MakeStep(22, v1::STRATEGY_ADAPTIVE, 3));
  EXPECT_EQ(tree.Children(kids[0]), (std::vector<NodeId>{a1, a2}));
  EXPECT_TRUE(tree.CheckInvariants().ok());
  // Beam keeps 2: drop b1, which takes child 1 with it; its sequence is released.
  const PruneResult p1 = *tree.PruneRollout(b1);
  EXPECT_EQ(p1.pruned_nodes, (std::vector<NodeId>{kids[1], b1}));
  EXPECT_EQ(p1.released_sequences, std::vector<uint64_t>{3});
  EXPECT_EQ(tree.node(kids[1]).status, v1::NODE_STATUS_PRUNED);
  // Drop a1: its parent kids[0] still has a2, so only a1 goes; seq 2 is released (no live
  // leaf uses it any more).
  const PruneResult p2 = *tree.PruneRollout(a1);
  EXPECT_EQ(p2.pruned_nodes, std::vector<NodeId>{a1});
  EXPECT_EQ(p2.released_sequences, std::vector<uint64_t>{2});
  EXPECT_EQ(tree.node(kids[0]).status, v1::NODE_STATUS_EXPLORED);
  // a2 is the last live rollout: pruning it is refused; not a leaf is refused.
  EXPECT_EQ(tree.PruneRollout(a2).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(tree.PruneRollout(kids[0]).ok());
  const NodeId a3 = *tree.ExtendRollout(a2, MakeStep(30, v1::STRATEGY_ARGMAX, 4));
  EXPECT_TRUE(tree.CheckInvariants().ok());
  const BranchResolution r = *tree.ResolveBranch(base, a3, {-0.1f, -3.0f});
  EXPECT_EQ(r.winner_candidate, kids[0]);
  EXPECT_EQ(r.committed_nodes, (std::vector<NodeId>{kids[0], a2, a3}));
  EXPECT_TRUE(r.pruned.pruned_nodes.empty());  // Everything else went mid-way.
  EXPECT_EQ(r.pruned.released_sequences, std::vector<uint64_t>{1});  // The base's sequence.
  EXPECT_EQ(tree.CommittedTokenIds(), (std::vector<int32_t>{9, 10, 21, 30}));
  EXPECT_EQ(tree.ExploredTokenCount(), 3);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(SearchTree, NestedBranchResolvesInsideTheRollout) {
  SearchTree tree = MakeTree({1}, 1);
  const std::vector<NodeId> outer = *tree.OpenBranch(
      kPromptNode, {MakeStep(10, v1::STRATEGY_BRANCH, 2), MakeStep(11, v1::STRATEGY_BRANCH, 3)});
  const NodeId leaf = *tree.ExtendRollout(outer[0], MakeStep(20, v1::STRATEGY_ARGMAX, 2));
  const std::vector<NodeId> inner = *tree.OpenBranch(
      leaf, {MakeStep(30, v1::STRATEGY_BRANCH, 4), MakeStep(31, v1::STRATEGY_BRANCH, 5)});
  EXPECT_EQ(tree.node(inner[0]).branch_depth, 2);
  EXPECT_EQ(tree.open_branches().size(), 2u);
  EXPECT_EQ(tree.OpenBranchOf(inner[1]), leaf);
  EXPECT_EQ(tree.OpenBranchOf(outer[1]), kPromptNode);
  const NodeId deep = *tree.ExtendRollout(inner[1], MakeStep(40, v1::STRATEGY_ARGMAX, 5));
  EXPECT_TRUE(tree.CheckInvariants().ok());
  // The outer branch waits for the inner one.
  const absl::Status early = tree.ResolveBranch(kPromptNode, outer[1], {}).status();
  EXPECT_EQ(early.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(early.message().find("nested"), std::string::npos);
  const BranchResolution in = *tree.ResolveBranch(leaf, deep, {-1.0f, -0.2f});
  EXPECT_TRUE(in.committed_nodes.empty());
  EXPECT_EQ(in.pruned.pruned_nodes, std::vector<NodeId>{inner[0]});
  EXPECT_EQ(in.pruned.released_sequences, (std::vector<uint64_t>{2, 4}));
  EXPECT_EQ(tree.node(deep).status, v1::NODE_STATUS_EXPLORED);
  EXPECT_EQ(tree.tail(), kPromptNode);
  // The outer rollout continues below the inner winner, still at depth 2.
  const NodeId more = *tree.ExtendRollout(deep, MakeStep(50, v1::STRATEGY_ARGMAX, 5));
  EXPECT_EQ(tree.node(more).branch_depth, 2);
  EXPECT_TRUE(tree.CheckInvariants().ok());
  const BranchResolution out = *tree.ResolveBranch(kPromptNode, more, {});
  EXPECT_EQ(out.committed_nodes, (std::vector<NodeId>{outer[0], leaf, inner[1], deep, more}));
  EXPECT_EQ(out.pruned.pruned_nodes, std::vector<NodeId>{outer[1]});
  EXPECT_EQ(out.pruned.released_sequences, (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(tree.CommittedTokenIds(), (std::vector<int32_t>{10, 20, 31, 40, 50}));
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

TEST(SearchTree, AnAbandonedBranchPrunesEverythingBelowItAndTheTailGoesOn) {
  SearchTree tree = MakeTree({1}, 1);
  const std::vector<NodeId> outer = *tree.OpenBranch(
      kPromptNode, {MakeStep(10, v1::STRATEGY_BRANCH, 2), MakeStep(11, v1::STRATEGY_BRANCH, 3)});
  const NodeId leaf = *tree.ExtendRollout(outer[0], MakeStep(20, v1::STRATEGY_ARGMAX, 2));
  const std::vector<NodeId> inner = *tree.OpenBranch(
      leaf, {MakeStep(30, v1::STRATEGY_BRANCH, 4), MakeStep(31, v1::STRATEGY_BRANCH, 5)});
  // Only the branch at the tail can be abandoned, and only while open.
  const Snapshot before(tree);
  EXPECT_EQ(tree.AbandonBranch(leaf).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Snapshot(tree), before);
  const BranchResolution gone = *tree.AbandonBranch(kPromptNode);
  EXPECT_EQ(gone.winner_candidate, kNoNode);
  EXPECT_EQ(gone.candidates, outer);
  EXPECT_TRUE(gone.committed_nodes.empty());
  EXPECT_EQ(gone.pruned.pruned_nodes,
            (std::vector<NodeId>{outer[0], outer[1], leaf, inner[0], inner[1]}));
  // The rollouts' sequences go; the tail's (1) stays with the job.
  EXPECT_EQ(gone.pruned.released_sequences, (std::vector<uint64_t>{2, 3, 4, 5}));
  EXPECT_TRUE(tree.open_branches().empty());
  EXPECT_EQ(tree.ExploredTokenCount(), 5);
  EXPECT_EQ(tree.AbandonBranch(kPromptNode).status().code(), absl::StatusCode::kFailedPrecondition);
  // The same token the abandoned candidate had may now be committed at the tail.
  EXPECT_TRUE(tree.Commit(MakeStep(10, v1::STRATEGY_BRANCH_SAMPLE, 1)).ok());
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

// A released sequence must not be one a live rollout leaf or the tail still runs on.
void ExpectReleasedNotLive(const SearchTree& tree, const std::vector<uint64_t>& released) {
  for (NodeId id = 0; id < tree.size(); ++id) {
    const Node& n = tree.node(id);
    bool live_leaf = id == tree.tail();
    if (n.status == v1::NODE_STATUS_EXPLORED) {
      live_leaf = true;
      for (NodeId c : tree.Children(id)) {
        if (tree.node(c).status == v1::NODE_STATUS_EXPLORED) live_leaf = false;
      }
    }
    if (live_leaf) {
      EXPECT_EQ(std::count(released.begin(), released.end(), n.sequence_id), 0)
          << "released sequence " << n.sequence_id << " of live node " << id;
    }
  }
}

// RandomOperationSequencesKeepInvariants' prune-or-resolve operation at random nodes, updating
// its model (`model`, `thrown_away`) and its count of successes per kind (`done`). `rand(n)`
// draws in [0, n) from the test's generator.
template <typename Rand>
void PruneOrResolve(SearchTree& tree, const Rand& rand, bool open, std::vector<int32_t>& model,
                    int32_t& thrown_away, std::array<int, 6>& done) {
  const NodeId at = rand(2) == 0 ? rand(tree.size()) : tree.size() - 1;
  if (rand(2) == 0) {
    const auto r = tree.PruneRollout(at);
    if (r.ok()) {
      thrown_away += static_cast<int32_t>(r->pruned_nodes.size());
      ExpectReleasedNotLive(tree, r->released_sequences);
      ++done[4];
    }
  } else if (open) {
    const NodeId point =
        tree.open_branches()[rand(static_cast<int>(tree.open_branches().size()))].point;
    const auto r = tree.ResolveBranch(point, at, {});
    if (r.ok()) {
      thrown_away += static_cast<int32_t>(r->pruned.pruned_nodes.size());
      for (NodeId c : r->committed_nodes) model.push_back(tree.node(c).token_id);
      ExpectReleasedNotLive(tree, r->pruned.released_sequences);
      ++done[5];
    }
  }
}

// Random operation sequences against an independent model of the committed tokens and of the
// throw-away count. Every operation is tried, valid or not; invariants hold after each.
TEST(SearchTree, RandomOperationSequencesKeepInvariants) {
  const uint32_t seed = TestSeed();
  SCOPED_TRACE(testing::Message() << "seed = " << seed);
  std::mt19937 rng(seed);
  // Successful operations per kind over all rounds: the sequences must reach every operation.
  std::array<int, 6> done{};  // commit, backspace, open, extend, prune, resolve
  for (int round = 0; round < 40; ++round) {
    SearchTree tree = MakeTree({1, 2, 3});
    std::vector<int32_t> model;  // Committed generated tokens.
    int32_t thrown_away = 0;
    uint64_t next_seq = 2;
    const auto rand = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    const auto token = [&] { return rand(kVocab); };
    for (int op = 0; op < 120; ++op) {
      const bool open = !tree.open_branches().empty();
      switch (rand(7)) {
        case 0:
        case 1: {  // Commit or insert.
          const bool insert = rand(4) == 0;
          const int32_t t = token();
          const auto r =
              insert ? tree.Insert(MakeStep(t, v1::STRATEGY_INSERT)) : tree.Commit(MakeStep(t));
          ASSERT_EQ(r.ok(), !open) << r.status();
          if (r.ok()) {
            model.push_back(t);
            ++done[0];
          }
          break;
        }
        case 2: {  // Backspace.
          const Node& tail = tree.node(tree.tail());
          const bool allowed = !open && tail.status == v1::NODE_STATUS_COMMITTED &&
                               !tree.WasBackspaced(tail.position);
          ASSERT_EQ(tree.Backspace().ok(), allowed);
          if (allowed) {
            model.pop_back();
            ++thrown_away;
            ++done[1];
          }
          break;
        }
        case 3: {  // Open a branch at the tail or, nested, at a live rollout leaf.
          // Nested branches open on a live leaf; the newest node often is one.
          NodeId at = tree.tail();
          if (open) at = rand(2) == 0 ? tree.size() - 1 : rand(tree.size());
          std::vector<Step> cands;
          for (int i = 0, n = 1 + rand(4); i < n; ++i) {
            cands.push_back(MakeStep(token(), v1::STRATEGY_BRANCH, next_seq++));
          }
          if (tree.OpenBranch(at, cands).ok()) ++done[2];
          break;
        }
        case 4:
        case 5: {  // Extend some node (often refused).
          const NodeId at = rand(3) == 0 ? rand(tree.size()) : tree.size() - 1 - rand(4);
          if (at >= 0 &&
              tree.ExtendRollout(at, MakeStep(token(), v1::STRATEGY_ADAPTIVE, next_seq++)).ok()) {
            ++done[3];
          }
          break;
        }
        case 6:  // Prune or resolve, at random nodes.
          PruneOrResolve(tree, rand, open, model, thrown_away, done);
          break;
      }
      const absl::Status invariants = tree.CheckInvariants();
      ASSERT_TRUE(invariants.ok()) << "round " << round << " op " << op << ": " << invariants;
      ASSERT_EQ(tree.CommittedTokenIds(), model);
      ASSERT_EQ(tree.ExploredTokenCount(), thrown_away);
      ASSERT_EQ(tree.NextPosition(), 3 + static_cast<int32_t>(model.size()));
    }
  }
  for (size_t kind = 0; kind < done.size(); ++kind) {
    EXPECT_GT(done[kind], 0) << "operation kind " << kind << " never succeeded";
  }
  std::printf("successful commit/backspace/open/extend/prune/resolve: %d %d %d %d %d %d\n", done[0],
              done[1], done[2], done[3], done[4], done[5]);
}

TEST(SearchTree, LongPathsStayCheap) {
  SearchTree tree = MakeTree();
  for (int i = 0; i < 50000; ++i) ASSERT_TRUE(tree.Commit(MakeStep(i % kVocab)).ok());
  EXPECT_EQ(tree.GeneratedTokenCount(), 50000);
  EXPECT_EQ(tree.CommittedTokenIds().back(), 49999 % kVocab);
  EXPECT_EQ(tree.NextPosition(), 50003);
  EXPECT_TRUE(tree.CheckInvariants().ok());
}

}  // namespace
}  // namespace arbor::coordinator
