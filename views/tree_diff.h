// Whether two trees of the same request are the same search, node for node: what
// Generation.Replay (and `arbor replay`, the viewer, POST /v1/jobs/{id}/replay) reports.
// Everything a client sees of a node is compared — token, text, position, logprob, metrics,
// strategy, status, scores, notes, alternatives — except what differs between runs by design:
// the worker sequence ids and the job id.
#ifndef ARBOR_VIEWS_TREE_DIFF_H_
#define ARBOR_VIEWS_TREE_DIFF_H_

#include <optional>
#include <string>

#include "arbor/v1/generation.pb.h"

namespace arbor::views {

struct TreeDifference {
  // Pre-order index of the first node that differs, or -1 for the prompt.
  int index = -1;
  // That node in the expected tree (or, past its end, in the actual one), or nothing.
  std::optional<arbor::v1::TreeNode> node;
  // The differing fields, one per line (e.g. "modified: token_id: 42 -> 43").
  std::string what;
};

// The first difference of `actual` from `expected`, or nothing when they are the same.
std::optional<TreeDifference> FirstTreeDifference(const arbor::v1::Tree& expected,
                                                  const arbor::v1::Tree& actual);

// Generation.Replay's verdict on a replay whose tree is `actual` (job ids left unset): the
// nodes of `expected`, whether they are identical and, if not, the first difference.
arbor::v1::ReplayResult CompareReplayTrees(const arbor::v1::Tree& expected,
                                           const arbor::v1::Tree& actual);

}  // namespace arbor::views

#endif  // ARBOR_VIEWS_TREE_DIFF_H_
