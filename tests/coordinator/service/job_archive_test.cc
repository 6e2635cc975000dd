// What GetTree answers from a stored job's whole tree: the subtree of a root, cut at a depth,
// with the top log-probabilities only when asked; and what GetJob and ListJobs answer for a job
// the store holds unfinished.
#include "coordinator/service/job_archive.h"

#include <vector>

#include "gtest/gtest.h"

namespace arbor::coordinator {
namespace {

// 0 ─┬─ 1 ── 3
//    └─ 2
StoredJob FinishedWithTree() {
  StoredJob stored;
  stored.accepted.job_id = "j1-00000001";
  FinishedJob& finished = stored.finished.emplace();
  finished.tree.set_job_id("j1-00000001");
  finished.tree.add_prompt_token_ids(5);
  const std::vector<std::vector<int32_t>> children = {{1, 2}, {3}, {}, {}};
  for (int32_t id = 0; id < 4; ++id) {
    arbor::v1::TreeNode* node = finished.tree.add_nodes();
    node->set_id(id);
    for (int32_t child : children[id]) node->add_children(child);
    node->add_top_logprobs()->set_token_id(id);
  }
  return stored;
}

std::vector<int32_t> Ids(const arbor::v1::Tree& tree) {
  std::vector<int32_t> ids;
  for (const arbor::v1::TreeNode& node : tree.nodes()) ids.push_back(node.id());
  return ids;
}

TEST(StoredTreeTest, CutsTheSubtreeOfARootToADepthInPreOrder) {
  const StoredJob stored = FinishedWithTree();
  arbor::v1::GetTreeRequest part;
  absl::StatusOr<arbor::v1::Tree> whole = StoredTree(stored, part);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(Ids(*whole), (std::vector<int32_t>{0, 1, 3, 2}));
  EXPECT_EQ(whole->nodes(0).top_logprobs_size(), 0);
  EXPECT_EQ(whole->prompt_token_ids_size(), 1);
  part.set_max_depth(1);
  EXPECT_EQ(Ids(StoredTree(stored, part).value()), (std::vector<int32_t>{0, 1, 2}));
  part.set_root(1);
  part.set_include_top_logprobs(true);
  absl::StatusOr<arbor::v1::Tree> below = StoredTree(stored, part);
  ASSERT_TRUE(below.ok()) << below.status();
  EXPECT_EQ(Ids(*below), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(below->root(), 1);
  EXPECT_EQ(below->nodes(0).top_logprobs_size(), 1);
  part.set_root(9);
  EXPECT_TRUE(absl::IsNotFound(StoredTree(stored, part).status()));
}

TEST(StoredTreeTest, AJobNotRunAgainYetHasNoTree) {
  StoredJob stored;
  stored.accepted.job_id = "j1-00000001";
  EXPECT_TRUE(absl::IsFailedPrecondition(StoredTree(stored, {}).status()));
}

TEST(StoredJobMessageTest, AnUnfinishedJobIsQueuedWithItsRequest) {
  StoredJob stored;
  stored.accepted.job_id = "j1-00000001";
  stored.accepted.client_tag = "tag";
  stored.accepted.created = absl::FromUnixMillis(1234);
  stored.accepted.request.set_seed(42);
  stored.accepted.request.set_client_tag("tag");
  stored.accepted.request.mutable_policy()->mutable_branch()->set_width(3);
  const arbor::v1::Job job = StoredJobMessage(stored, /*brief=*/false);
  EXPECT_EQ(job.state(), arbor::v1::JOB_STATE_QUEUED);
  EXPECT_EQ(job.seed(), 42u);
  EXPECT_EQ(job.client_tag(), "tag");
  EXPECT_EQ(job.created_unix_ms(), 1234);
  EXPECT_EQ(job.policy().branch().width(), 3);
  EXPECT_EQ(job.request().client_tag(), "");  // Job.request is the job's, as GetJob has it.
  const arbor::v1::Job brief = StoredJobMessage(stored, /*brief=*/true);
  EXPECT_FALSE(brief.has_request());
  EXPECT_FALSE(brief.has_policy());
}

}  // namespace
}  // namespace arbor::coordinator
