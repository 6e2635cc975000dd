// SearchTree::CheckInvariants, which every tree test asserts, rejects broken trees: a tree built
// through the public operations (a committed path, an insert, a backspace and an open branch
// with a rollout) passes, and each fault planted in it afterwards — a broken link, a skipped
// position, a stale counter, a second live child with the same token, an explored node off
// the open branch, a committed path that leaves the tree — fails with a message naming it.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "coordinator/tree/search_tree.h"

namespace arbor::coordinator {

// The tree's private state, for planting faults (a friend of SearchTree).
class SearchTreeTestPeer {
 public:
  static std::vector<Node>& nodes(SearchTree& tree) { return tree.nodes_; }
  static std::vector<NodeId>& committed_path(SearchTree& tree) { return tree.committed_path_; }
  static std::array<int32_t, v1::NodeStatus_ARRAYSIZE>& status_counts(SearchTree& tree) {
    return tree.status_counts_;
  }
};

namespace {

constexpr int32_t kVocab = 100;

Step MakeStep(int32_t token, v1::Strategy strategy = v1::STRATEGY_ARGMAX) {
  Step step;
  step.token_id = token;
  step.logprob = -0.5f;
  step.strategy = strategy;
  step.sequence_id = 1;
  return step;
}

// Prompt 1 2 3, committed 10 11, inserted 12, 13 backspaced and redrawn as 14, then a branch
// at the tail with candidates 20 and 21 and one rollout step 30 below candidate 20.
struct BuiltTree {
  SearchTree tree;
  NodeId committed = kNoNode;  // Token 10.
  NodeId candidate = kNoNode;  // Token 20.
  NodeId rollout = kNoNode;    // Token 30, below the candidate.
};

BuiltTree Build() {
  BuiltTree built{*SearchTree::Create({1, 2, 3}, kVocab, 1)};
  SearchTree& tree = built.tree;
  built.committed = *tree.Commit(MakeStep(10));
  EXPECT_TRUE(tree.Commit(MakeStep(11)).ok());
  EXPECT_TRUE(tree.Insert(MakeStep(12, v1::STRATEGY_INSERT)).ok());
  EXPECT_TRUE(tree.Commit(MakeStep(13)).ok());
  EXPECT_TRUE(tree.Backspace().ok());
  EXPECT_TRUE(tree.Commit(MakeStep(14, v1::STRATEGY_RESAMPLE)).ok());
  Step first = MakeStep(20, v1::STRATEGY_FORCED);
  Step second = MakeStep(21, v1::STRATEGY_FORCED);
  first.sequence_id = 2;
  second.sequence_id = 3;
  const std::vector<Step> candidates = {first, second};
  absl::StatusOr<std::vector<NodeId>> opened = tree.OpenBranch(tree.tail(), candidates);
  EXPECT_TRUE(opened.ok()) << opened.status();
  built.candidate = (*opened)[0];
  Step rollout = MakeStep(30);
  rollout.sequence_id = 2;
  built.rollout = *tree.ExtendRollout(built.candidate, rollout);
  return built;
}

void ExpectRejected(const std::function<void(BuiltTree&)>& plant, const std::string& words) {
  BuiltTree built = Build();
  ASSERT_TRUE(built.tree.CheckInvariants().ok()) << built.tree.CheckInvariants();
  plant(built);
  const absl::Status status = built.tree.CheckInvariants();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  EXPECT_NE(status.message().find(words), std::string::npos) << status;
}

TEST(SearchTreeInvariants, TheBuiltTreePasses) {
  BuiltTree built = Build();
  EXPECT_TRUE(built.tree.CheckInvariants().ok()) << built.tree.CheckInvariants();
}

TEST(SearchTreeInvariants, RejectsABrokenParentLink) {
  ExpectRejected([](BuiltTree& b) { SearchTreeTestPeer::nodes(b.tree)[b.rollout].parent = 0; },
                 "broken child link");
  ExpectRejected(
      [](BuiltTree& b) { SearchTreeTestPeer::nodes(b.tree)[b.committed].parent = b.rollout; },
      "broken child link to 1");
}

TEST(SearchTreeInvariants, RejectsAStaleChildList) {
  ExpectRejected(
      [](BuiltTree& b) { SearchTreeTestPeer::nodes(b.tree)[b.candidate].last_child = kNoNode; },
      "last_child is stale");
}

TEST(SearchTreeInvariants, RejectsASkippedPosition) {
  ExpectRejected([](BuiltTree& b) { ++SearchTreeTestPeer::nodes(b.tree)[b.rollout].position; },
                 "position skips");
}

TEST(SearchTreeInvariants, RejectsATokenOutsideTheVocabulary) {
  ExpectRejected(
      [](BuiltTree& b) { SearchTreeTestPeer::nodes(b.tree)[b.rollout].token_id = kVocab; },
      "token outside vocab");
}

TEST(SearchTreeInvariants, RejectsTwoLiveSiblingsWithOneToken) {
  ExpectRejected(
      [](BuiltTree& b) {
        std::vector<Node>& nodes = SearchTreeTestPeer::nodes(b.tree);
        nodes[nodes[b.candidate].next_sibling].token_id = nodes[b.candidate].token_id;
      },
      "two live children share a token");
}

TEST(SearchTreeInvariants, RejectsAStaleStatusCounter) {
  ExpectRejected(
      [](BuiltTree& b) { ++SearchTreeTestPeer::status_counts(b.tree)[v1::NODE_STATUS_EXPLORED]; },
      "status counters disagree with the nodes");
}

TEST(SearchTreeInvariants, RejectsAnExploredNodeOffTheOpenBranch) {
  ExpectRejected(
      [](BuiltTree& b) {
        SearchTreeTestPeer::nodes(b.tree)[b.committed].status = v1::NODE_STATUS_EXPLORED;
      },
      "committed node has explored child 1 without an open branch");
}

TEST(SearchTreeInvariants, RejectsACommittedPathThatLeavesTheTree) {
  ExpectRejected([](BuiltTree& b) { SearchTreeTestPeer::committed_path(b.tree)[0] = 1; },
                 "no prompt node at the head of the committed path");
}

}  // namespace
}  // namespace arbor::coordinator
