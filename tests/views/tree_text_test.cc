// The terminal view centred on a node (--around) and bounded by --depth: the committed path
// window, the branch points in it (numbered as in the whole view), an off-path node's line of
// descent, rollout previews of --depth tokens, and the errors that name the option.
#include "views/tree_text.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/views/synthetic_tree.h"

namespace arbor::views {
namespace {

// Node i (1..100) is committed " i" at position 2 + i. Nodes 20 and 60 are branch points [1] and
// [2]: beside the path, each has a pruned candidate " alt" (101, 104) with a rollout " x", " y".
struct PathJob {
  SyntheticTree tree{"j"};
  int32_t pruned_tail = 0;
  PathJob() {
    int32_t n = 0;
    for (int i = 1; i <= 100; ++i) {
      n = tree.Add(n, absl::StrCat(" ", i), v1::NODE_STATUS_COMMITTED, v1::STRATEGY_ARGMAX, 0, 0);
    }
    // Pruned alternatives of nodes 21 and 61 (so 20 and 60 are branch points): rollouts of 3.
    for (int32_t point : {20, 60}) {
      int32_t alt = tree.Add(point, " alt", v1::NODE_STATUS_PRUNED, v1::STRATEGY_BRANCH, -2, 1);
      alt = tree.Add(alt, " x", v1::NODE_STATUS_PRUNED, v1::STRATEGY_ADAPTIVE, 0, 1);
      pruned_tail = tree.Add(alt, " y", v1::NODE_STATUS_PRUNED, v1::STRATEGY_ADAPTIVE, 0, 1);
    }
  }
};

TEST(TreeTextAround, ShowsThePathWindowAndItsBranchPoints) {
  const PathJob job;
  TreeTextOptions options;
  options.around = 58;
  options.depth = 3;
  const absl::StatusOr<std::string> text = TreeToText(job.tree.tree(), options);
  ASSERT_TRUE(text.ok()) << text.status();
  // Positions 57..63 (nodes 55..61); [2] keeps its number from the whole path.
  EXPECT_NE(text->find("committed path around node 58, positions 57-63:\n"
                       "… 55 56 57⟪ 58⟫ 59 60[2] 61…\n"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("[2] branch at node 60, position 63"), std::string::npos) << *text;
  EXPECT_EQ(text->find("[1] branch"), std::string::npos) << *text;  // Outside the window.
  // Previews of --depth tokens: the winner's rollout runs on along the path.
  EXPECT_NE(text->find("  * node 61    \" 61 62 63\"   "), std::string::npos) << *text;
  EXPECT_NE(text->find("    node 104   \" alt x y\"    "), std::string::npos) << *text;
}

TEST(TreeTextAround, AnOffPathNodeShowsItsLineFromThePath) {
  const PathJob job;
  TreeTextOptions options;
  options.around = job.pruned_tail;  // " y" below node 60's pruned alternative.
  options.depth = 2;
  const absl::StatusOr<std::string> text = TreeToText(job.tree.tree(), options);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_NE(
      text->find("committed path around node 106, positions 60-64:\n… 58 59⟪ 60⟫[2] 61 62…\n"),
      std::string::npos)
      << *text;
  // The window centres on the path node its branch left from, marked; depth 2: the last two
  // tokens of its line, the cut marked.
  EXPECT_NE(text->find("node 106 is PRUNED, off the committed path; its line from path node 60: "
                       "\"… x⟪ y⟫\""),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("[2] branch at node 60"), std::string::npos);
}

TEST(TreeTextAround, TheWholeViewPreviewsRolloutsToDepth) {
  const PathJob job;
  TreeTextOptions options;
  options.depth = 1;
  const absl::StatusOr<std::string> one = TreeToText(job.tree.tree(), options);
  ASSERT_TRUE(one.ok());
  EXPECT_NE(one->find("committed path from node 0:\n 1 2 3"), std::string::npos);
  EXPECT_NE(one->find("[1] branch at node 20"), std::string::npos);
  EXPECT_NE(one->find("[2] branch at node 60"), std::string::npos);
  EXPECT_NE(one->find("node 101   \" alt\"  "), std::string::npos) << *one;
  // Rollout size counts the whole rollout whatever the preview shows.
  EXPECT_NE(one->find("  3 tokens  PRUNED"), std::string::npos) << *one;
}

TEST(TreeTextAround, OptionsAreValidated) {
  const PathJob job;
  TreeTextOptions options;
  options.around = 5000;
  EXPECT_EQ(TreeToText(job.tree.tree(), options).status().message(),
            "around: node 5000 is not in the tree of job j (107 nodes from root 0)");
  options.around = 3;
  options.depth = 0;
  EXPECT_EQ(TreeToText(job.tree.tree(), options).status().message(),
            "depth: must be at least 1, got 0");
}

}  // namespace
}  // namespace arbor::views
