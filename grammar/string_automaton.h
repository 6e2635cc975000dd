// What a string's characters may be, as a deterministic automaton over Unicode code points: the
// `pattern`/`format` DFA (regex_dfa.h, or any text without one) crossed with a count of code
// points for `minLength`/`maxLength`, so the matcher checks a string's content and length in one
// state per frame. States that cannot reach acceptance are pruned, so any transition the matcher
// takes leaves a way to finish the string.
//
// Only code points a JSON string carries plainly are transitions: anything but the control
// characters other than \b \f \n \r \t (escaped in JSON), and no surrogates; the matcher writes
// characters as raw UTF-8 or those short escapes, never \u escapes, in such strings.
#ifndef ARBOR_GRAMMAR_STRING_AUTOMATON_H_
#define ARBOR_GRAMMAR_STRING_AUTOMATON_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace arbor::grammar {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Code points [lo, hi] lead to state `next`.
struct CodePointRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
  int32_t next = -1;
};

// A DFA over code points: start state 0, ranges sorted and disjoint per state.
struct CodePointDfa {
  struct State {
    std::vector<CodePointRange> ranges;
    bool accepting = false;
  };
  std::vector<State> states;
};

// Any text: one accepting state that takes every code point.
CodePointDfa AnyTextDfa();

// A string longer than this is never generated: a larger maxLength binds nothing more (a shorter
// string still satisfies it).
inline constexpr int kMaxGeneratedLength = 4096;
// The crossed automaton's size limit.
inline constexpr int kMaxStringStates = 200000;

class StringAutomaton {
 public:
  StringAutomaton() = default;
  // `dfa`'s strings of min_length to max_length code points (max_length -1: no bound).
  // INVALID_ARGUMENT (the message without a pointer) when no string has a length in range, or
  // when the crossed automaton would exceed kMaxStringStates.
  static absl::StatusOr<StringAutomaton> Build(const CodePointDfa& dfa, int min_length,
                                               int max_length);

  static constexpr int32_t kStart = 0;
  bool Accepting(int32_t state) const { return states_[state].accepting; }
  // The state after `code_point`, or -1 when it leaves no way to finish.
  int32_t Next(int32_t state, uint32_t code_point) const;
  // Whether some code point in [lo, hi] has a transition from `state`.
  bool Viable(int32_t state, uint32_t lo, uint32_t hi) const;
  size_t size() const { return states_.size(); }

  // Per state, the first state that no string of at most `horizon` code points tells apart from
  // it (the same steps defined, the same acceptance after each): the token masker's cache key,
  // since no token reads further. A count of lengths far from its bounds, a pattern's position
  // in a long repeat, collapse to a few keys.
  std::vector<int32_t> Representatives(int horizon) const;

  // Per representative at `horizon` (`representative`, from Representatives) that is no other
  // state's Base: an earlier representative and the most code points k (< horizon) no string of
  // which tells the two apart, or {-1, 0}. Tokens that read at most k code points fare alike from
  // both, so the masker walks only longer ones.
  std::vector<std::pair<int32_t, int>> Nearest(const std::vector<int32_t>& representative,
                                               int horizon) const;

  // The state at the same pattern position with the fewest code points at or above minLength
  // (or `state` itself below minLength, or without maxLength, where counts stop at minLength):
  // every token's code points that `state` takes, this state takes too, since neither bound
  // binds tighter on it. Tokens from `state` are then decided by where they end from the base.
  int32_t Base(int32_t state) const { return bases_[state]; }

 private:
  std::vector<CodePointDfa::State> states_;
  std::vector<int32_t> bases_;
};

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_STRING_AUTOMATON_H_
