// A readable terminal view of a search tree (arbor::v1::Tree), for `arbor tree JOB` and the demo:
// a summary line, the committed path as flowing text with its branch points ([1], [2], …),
// backspaced tokens (⟨⌫ …⟩) and inserted tokens ({…}) marked, then at each branch point its
// alternatives with their rollout scores and text, and on request the metrics of every committed
// node. Centred on one node (`around`), it shows only the path and branch points near it, so a
// 4,000-token job stays readable (docs/TREE_FORMAT.md, "Terminal view").
#ifndef ARBOR_VIEWS_TREE_TEXT_H_
#define ARBOR_VIEWS_TREE_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "arbor/v1/generation.pb.h"

namespace arbor::views {

struct TreeTextOptions {
  bool show_metrics = false;  // A table of every committed node's step metrics.
  bool color = false;         // ANSI colour per strategy (tree_display.h) for terminals.
  // Centre the view on this node: only the committed path within `depth` positions of it (of
  // the path node its branch left from, when it is off the path), the branch points in that
  // window, and the node's own line of descent when it is off the path. Must be in the tree.
  std::optional<int32_t> around;
  // Tree levels, >= 1: around a node, the positions shown on either side of it; below a branch
  // point, the tokens of each candidate's rollout shown.
  int depth = 8;
};

// INVALID_ARGUMENT naming the option ("around: …", "depth: …") for a depth below 1 or an
// `around` node that the tree does not hold.
absl::StatusOr<std::string> TreeToText(const v1::Tree& tree, const TreeTextOptions& options = {});

}  // namespace arbor::views

#endif  // ARBOR_VIEWS_TREE_TEXT_H_
