// Builds arbor::v1::Tree messages by hand for the tests of the tree renderings (DOT, text), so a
// test can shape a tree (a 2,000-token run, a branch, a backspace, an insert) without driving a
// SearchTree through a job.
#ifndef ARBOR_TESTS_VIEWS_SYNTHETIC_TREE_H_
#define ARBOR_TESTS_VIEWS_SYNTHETIC_TREE_H_

#include <cstdint>
#include <string>

#include "arbor/v1/generation.pb.h"

namespace arbor::views {

class SyntheticTree {
 public:
  // Node 0 holds a three-token prompt.
  explicit SyntheticTree(const std::string& job_id) {
    tree_.set_job_id(job_id);
    for (int32_t id : {1, 2, 3}) tree_.add_prompt_token_ids(id);
    v1::TreeNode* prompt = tree_.add_nodes();
    prompt->set_parent(-1);
    prompt->set_token_id(-1);
    prompt->set_position(2);
    prompt->set_status(v1::NODE_STATUS_PROMPT);
    prompt->set_strategy(v1::STRATEGY_FORCED);
  }

  // Appends a child of `parent` (ids in creation order, as the server assigns them).
  int32_t Add(int32_t parent, const std::string& text, v1::NodeStatus status,
              v1::Strategy strategy = v1::STRATEGY_ARGMAX, float score = 0, int32_t depth = 0) {
    const int32_t id = tree_.nodes_size();
    v1::TreeNode* p = tree_.mutable_nodes(parent);
    p->add_children(id);
    const int32_t position = p->position() + 1;
    v1::TreeNode* n = tree_.add_nodes();
    n->set_id(id);
    n->set_parent(parent);
    n->set_token_id(100 + id);
    n->set_text(text);
    n->set_position(position);
    n->set_logprob(-0.25f);
    n->set_status(status);
    n->set_strategy(strategy);
    n->set_branch_score(score);
    n->set_branch_depth(depth);
    n->mutable_metrics()->set_entropy(1.5f);
    n->mutable_metrics()->set_varentropy(0.5f);
    return id;
  }

  // A chain of `count` children, each the parent of the next; returns the last.
  int32_t Chain(int32_t parent, int count, v1::NodeStatus status, const std::string& text = " w",
                int32_t depth = 0) {
    for (int i = 0; i < count; ++i)
      parent = Add(parent, text, status, v1::STRATEGY_ARGMAX, 0, depth);
    return parent;
  }

  const v1::Tree& tree() const { return tree_; }

 private:
  v1::Tree tree_;
};

}  // namespace arbor::views

#endif  // ARBOR_TESTS_VIEWS_SYNTHETIC_TREE_H_
