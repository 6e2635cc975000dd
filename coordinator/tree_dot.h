// Graphviz DOT rendering of a search tree (arbor::v1::Tree): `dot -Tsvg tree.dot > tree.svg`.
// The committed path is drawn bold on a tinted fill, pruned and backspaced nodes greyed and
// dashed, the outline of every node coloured by the strategy that produced it (tree_display.h),
// and each label carries the token text with the step's entropy H and varentropy V.
#ifndef ARBOR_COORDINATOR_TREE_DOT_H_
#define ARBOR_COORDINATOR_TREE_DOT_H_

#include <string>

#include "arbor/v1/generation.pb.h"

namespace arbor::coordinator {

std::string TreeToDot(const v1::Tree& tree);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_TREE_DOT_H_
