// Graphviz DOT rendering of a search tree (arbor::v1::Tree): `dot -Tsvg tree.dot > tree.svg`.
// Top to bottom, with a legend. Every linear run of committed (or of explored, or of pruned)
// tokens is one box showing the run's text and length, so a 2,000-token job draws as a few dozen
// boxes; branch points, branch candidates (with their scores), backspaced and inserted tokens and
// the prompt stay boxes of their own. The committed path is drawn bold on a tinted fill, pruned
// and backspaced nodes greyed and dashed, the outline of every box coloured by the strategy that
// produced it (tree_display.h), and a single token's label carries its text with the step's
// entropy H and varentropy V (docs/TREE_FORMAT.md, "Graphviz DOT").
#ifndef ARBOR_VIEWS_TREE_DOT_H_
#define ARBOR_VIEWS_TREE_DOT_H_

#include <string>

#include "arbor/v1/generation.pb.h"

namespace arbor::views {

std::string TreeToDot(const v1::Tree& tree);

}  // namespace arbor::views

#endif  // ARBOR_VIEWS_TREE_DOT_H_
