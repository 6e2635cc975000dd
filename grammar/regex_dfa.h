// A JSON Schema `pattern` (regex_parser.h's subset of ECMA-262) compiled to a minimal DFA over
// code points: a Thompson NFA of the tree, then the subset construction. JSON Schema patterns
// are unanchored ("a" holds for any string containing "a"), so the automaton searches: any text
// may precede and follow a match, and ^ and $ hold only at the string's ends (however deep in
// the pattern they are: "(^a|b)c" is honoured exactly).
#ifndef ARBOR_GRAMMAR_REGEX_DFA_H_
#define ARBOR_GRAMMAR_REGEX_DFA_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grammar/string_automaton.h"

namespace arbor::grammar {

// Limits on the automata of one pattern, so a schema's compile time stays bounded: repeats are
// expanded in the NFA, and an unanchored pattern can need exponentially many DFA states ("a.{20}"
// tracks where each of the last 21 characters could have started a match).
inline constexpr int kMaxRegexNfaStates = 50000;
inline constexpr int kMaxRegexDfaStates = 10000;

// The strings in which `pattern` (UTF-8) finds a match; INVALID_ARGUMENT saying what is
// malformed or unsupported, or which limit it passes.
absl::StatusOr<CodePointDfa> CompileRegex(absl::string_view pattern);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_REGEX_DFA_H_
