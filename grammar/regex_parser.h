// JSON Schema's `pattern`: a subset of ECMA-262 regular expressions parsed to a tree
// (regex_dfa.h compiles it to an automaton).
//
// The subset: literal characters; escapes \n \r \t \v \f \0 \cX \xHH \uXXXX (a surrogate pair
// of two as one code point) \u{H…} and of any punctuation (\. \/ \- …); `.` (any code point but
// the line terminators \n \r U+2028 U+2029); classes `[…]`, `[^…]` with ranges and the class
// escapes \d \D \w \W \s \S (\b in a class is backspace); groups `(…)`, `(?:…)`, `(?<name>…)`;
// alternation; the quantifiers * + ? {n} {n,} {n,m}, lazy or not (laziness changes which match
// is found, not whether one is); the anchors ^ and $ (without the multiline flag: the string's
// ends). Refused, saying what and where: backreferences (\1, \k<name>), lookaround, \b \B,
// Unicode properties \p{…} \P{…}, inline flags, repeats beyond kMaxRepeat, nesting beyond
// kMaxRegexNesting, patterns longer than kMaxPatternLength code points.
//
// Sets are what both ECMA-262 and Python's `re` (the reference validators use) match, so every
// string generated is valid under either: ECMA-262 for ASCII, and where the two disagree beyond
// it the smaller set: \s without U+FEFF; \D, \W and classes that negate \d or \w only ASCII (Python
// counts other scripts' digits and letters in \d and \w); \S and negations of \s without U+0085.
#ifndef ARBOR_GRAMMAR_REGEX_PARSER_H_
#define ARBOR_GRAMMAR_REGEX_PARSER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grammar/code_point_set.h"

namespace arbor::grammar {

inline constexpr int kMaxPatternLength = 4096;  // Code points.
inline constexpr int kMaxRepeat = 1000;         // The largest n or m of {n}, {n,}, {n,m}.
inline constexpr int kMaxRegexNesting = 64;     // Groups within groups.

struct RegexNode {
  enum class Kind : uint8_t {
    kSet,          // One code point of `set`.
    kConcat,       // `children` one after another (none: the empty string).
    kAlternation,  // One of `children`.
    kRepeat,       // children[0], min to max times (max -1: unbounded).
    kBegin,        // ^: the start of the string.
    kEnd,          // $: the end of the string.
  };
  Kind kind = Kind::kConcat;
  CodePointSet set = {};
  std::vector<RegexNode> children = {};
  int min = 0;
  int max = -1;
};

// The tree of `pattern` (UTF-8), or INVALID_ARGUMENT saying what is malformed or unsupported and
// at which code point offset.
absl::StatusOr<RegexNode> ParseRegex(absl::string_view pattern);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_REGEX_PARSER_H_
