// A readable terminal view of a search tree (arbor::v1::Tree), for `arbor tree JOB` and the demo:
// a summary line, the committed path as flowing text with its branch points ([1], [2], …),
// backspaced tokens (⟨⌫ …⟩) and inserted tokens ({…}) marked, then at each branch point its
// alternatives with their rollout scores, and on request the metrics of every committed node.
#ifndef ARBOR_COORDINATOR_TREE_TEXT_H_
#define ARBOR_COORDINATOR_TREE_TEXT_H_

#include <string>

#include "arbor/v1/generation.pb.h"

namespace arbor::coordinator {

struct TreeTextOptions {
  bool show_metrics = false;  // A table of every committed node's step metrics.
  bool color = false;         // ANSI colour per strategy (tree_display.h) for terminals.
};

std::string TreeToText(const v1::Tree& tree, const TreeTextOptions& options = {});

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_TREE_TEXT_H_
