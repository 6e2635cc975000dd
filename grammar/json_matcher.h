// A byte-at-a-time recogniser of the documents a JsonGrammar generates: a pushdown automaton
// whose stack holds one small Frame per open value. Every byte is decided by the top frame alone
// (push a child, stay, pop after it, or pop and hand the byte to the frame below), which is what
// lets the token masker (token_masker.h) cache, per top frame, which tokens stay inside it.
#ifndef ARBOR_GRAMMAR_JSON_MATCHER_H_
#define ARBOR_GRAMMAR_JSON_MATCHER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "grammar/json_grammar.h"

namespace arbor::grammar {

// Whitespace between two tokens of the document is nothing, one space, or a newline and at most
// kMaxIndent spaces or tabs (as llama.cpp's JSON grammars allow): compact, spaced and indented
// JSON all fit, and a model cannot spend its budget on blank lines.
inline constexpr int kMaxIndent = 20;
// Open values at once: free-form values nest at most this deep.
inline constexpr size_t kMaxNesting = 64;
// Digits of a number's integer part and of its fraction; exponent digits.
inline constexpr int kMaxNumberDigits = 15;
inline constexpr int kMaxExponentDigits = 3;

// One open value. `phase` is where in the value the matcher is; the rest depends on the kind:
// objects keep the next property in `count` and, in a key, its node in the keys' trie (Node's
// `names`) in `a`; arrays count their items (clamped to what the bounds need); literals keep
// their node in the literals' trie in `a`; strings and numbers count pending UTF-8 bytes or
// digits in `count`, and a bounded number keeps its integer part in `a` and `b`, then in its
// fraction only whether the digits so far equal a bound's (two bits of `b`).
struct Frame {
  int32_t node = 0;
  uint8_t phase = 0;
  uint8_t whitespace = 0;
  uint16_t count = 0;
  int32_t a = 0;
  int32_t b = 0;

  bool operator==(const Frame&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const Frame& f) {
    return H::combine(std::move(h), f.node, f.phase, f.whitespace, f.count, f.a, f.b);
  }
};

class JsonMatcher {
 public:
  // Starts before the grammar's root value. `grammar` must outlive the matcher.
  explicit JsonMatcher(const JsonGrammar* grammar);
  // Starts from a top frame alone (the masker's context-free view of a state).
  JsonMatcher(const JsonGrammar* grammar, const Frame& top);

  enum class Fed {
    kAccepted,
    kRejected,
    kLeftFloor,  // It would pop below the floor set with set_floor (the masker's signal).
  };
  // Feeds one byte; on kRejected or kLeftFloor the state is unspecified (copy first).
  Fed Feed(uint8_t byte);
  // True when every byte was accepted.
  bool FeedAll(absl::string_view bytes);
  // Pops below `floor` frames report kLeftFloor instead of happening (0: none; the default).
  void set_floor(size_t floor) { floor_ = floor; }
  // Counts `frames` more under the stack toward kMaxNesting: a matcher holding only a top frame
  // (the masker's walk) then refuses the pushes the whole stack would refuse.
  void set_frames_below(size_t frames) { frames_below_ = frames; }

  // The document may end here: the root value is complete (or is a number or literal that
  // could end now).
  bool AcceptsEnd() const;
  // The root value is closed: nothing but the end can follow.
  bool Complete() const { return stack_.empty(); }
  const std::vector<Frame>& stack() const { return stack_; }

 private:
  enum class Step { kReject, kConsume, kConsumePop, kPopRetry, kRetry, kPushRetry };
  Step StepFrame(Frame& frame, uint8_t byte, int32_t& push);
  Step StepObject(Frame& frame, uint8_t byte, int32_t& push);
  Step StepArray(Frame& frame, uint8_t byte, int32_t& push);
  Step StepString(Frame& frame, uint8_t byte) const;
  Step StepNumber(Frame& frame, uint8_t byte, bool integer) const;
  bool NumberMayEnd(const Frame& frame) const;
  Step StepLiterals(Frame& frame, uint8_t byte, const Node& node) const;
  Step StepUnion(Frame& frame, uint8_t byte) const;
  Step StepKey(Frame& frame, uint8_t byte);
  Step StepTag(Frame& frame, uint8_t byte) const;
  // A whitespace byte in a gap, within the rule above.
  static bool Whitespace(Frame& frame, uint8_t byte);
  bool CanEndFrame(const Frame& frame) const;

  const JsonGrammar* grammar_;
  std::vector<Frame> stack_;
  size_t floor_ = 0;
  size_t frames_below_ = 0;
};

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_JSON_MATCHER_H_
