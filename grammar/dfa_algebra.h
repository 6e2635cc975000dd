// Operations on code-point DFAs (string_automaton.h's CodePointDfa): pruning the states that
// cannot reach acceptance, minimising, and intersecting, so a string's `pattern`, `format` and
// length bounds all hold in one automaton (string_keywords.h).
#ifndef ARBOR_GRAMMAR_DFA_ALGEBRA_H_
#define ARBOR_GRAMMAR_DFA_ALGEBRA_H_

#include <vector>

#include "absl/status/statusor.h"
#include "grammar/string_automaton.h"

namespace arbor::grammar {

// Per state, whether an accepting state is reachable from it.
std::vector<bool> LiveStates(const std::vector<CodePointDfa::State>& states);

// Moore's partition refinement of `states` from the partition `block` (a block id per state):
// each round splits the blocks whose states differ in which blocks their code points lead to, for
// at most `rounds` rounds (-1: until nothing splits). After r rounds, two states share a block
// exactly when no string of at most r code points tells them apart (acceptance included, when the
// first partition separates it).
std::vector<int32_t> RefineBlocks(const std::vector<CodePointDfa::State>& states,
                                  std::vector<int32_t> block, int rounds);

// The smallest DFA accepting what `dfa` accepts (Moore's partition refinement after dropping
// dead states); state 0 stays the start. When nothing is accepted, one state without transitions.
CodePointDfa MinimizeDfa(const CodePointDfa& dfa);

// The strings both accept (product construction), minimised; INVALID_ARGUMENT when the product
// has more than `max_states` states.
absl::StatusOr<CodePointDfa> IntersectDfas(const CodePointDfa& a, const CodePointDfa& b,
                                           int max_states);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_DFA_ALGEBRA_H_
