// Which tokens a grammar state allows next: the vocabulary-wide mask constrained decoding
// applies to a row's logits before anything else reads them.
//
// A token is allowed when the matcher accepts all its bytes from the state. Testing every token
// costs a walk over the vocabulary trie, so the work is split the way XGrammar splits it: the
// matcher decides each byte from its top frame alone, hence which tokens stay inside the top
// frame (or in values they open) depends on that frame only — and, near kMaxNesting, on how many
// frames lie under it, since a token may open values — and is cached per frame; only tokens
// that close the top frame and go on into the frames below are checked against the whole stack,
// and the complete mask is cached per stack too. A string being generated is one top frame for
// all its steps, so its steps cost a cache lookup and a check of the few tokens that hold a quote.
// A constrained string's frame is keyed by its automaton state's representative among the states
// no token can tell apart (StringAutomaton::Representatives), so a length count or a long repeat
// does not walk the trie at every character. Near maxLength every count is told apart, so a
// count at or above minLength is decided from its base (StringAutomaton::Base), walked once: the
// base's tokens grouped by the frame each ends in, one token of each group tried from the count.
// Other states told apart only by long tokens (a fixed repeat near its end) take an earlier
// state's short tokens as they are and walk only the trie's paths to tokens long enough to differ.
//
// Not thread-safe: one masker per compiled grammar, used from one thread at a time.
#ifndef ARBOR_GRAMMAR_TOKEN_MASKER_H_
#define ARBOR_GRAMMAR_TOKEN_MASKER_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"
#include "grammar/json_grammar.h"
#include "grammar/json_matcher.h"
#include "grammar/token_trie.h"

namespace arbor::grammar {

// A set of token ids as 64-bit words, id i at bit i % 64 of word i / 64.
using TokenBits = std::vector<uint64_t>;

inline bool TestBit(const TokenBits& bits, int32_t id) { return (bits[id >> 6] >> (id & 63)) & 1; }
inline void SetBit(TokenBits& bits, int32_t id) { bits[id >> 6] |= uint64_t{1} << (id & 63); }
inline void ClearBit(TokenBits& bits, int32_t id) { bits[id >> 6] &= ~(uint64_t{1} << (id & 63)); }

class TokenMasker {
 public:
  // `grammar` and `trie` must outlive the masker; masks are `vocab_size` bits (≥ the trie's).
  TokenMasker(const JsonGrammar* grammar, const TokenTrie* trie, int32_t vocab_size);

  // The tokens allowed after `matcher`'s state, into `bits` (resized): those whose bytes it
  // accepts, none of `end_tokens`, and then all of `end_tokens` if the document may end here.
  void Mask(const JsonMatcher& matcher, absl::Span<const int32_t> end_tokens, TokenBits& bits);

  // The same by testing every token on its own, without the trie or the caches: the reference
  // the fast path is checked against.
  void MaskByEachToken(const JsonMatcher& matcher, absl::Span<const int32_t> end_tokens,
                       TokenBits& bits) const;

  // Work done, for benchmarks: trie walks (top-frame cache misses) and whole-stack misses.
  int64_t frame_misses() const { return frame_misses_; }
  int64_t stack_misses() const { return stack_misses_; }

 private:
  // What a top frame decides alone.
  struct FramePart {
    TokenBits inside;              // Tokens whose bytes stay in the frame (or values it opens).
    std::vector<int32_t> leaving;  // Tokens that close it: they need the frames below.
    // Of a string base walked: its inside tokens by the frame each ends in.
    std::vector<std::vector<int32_t>> ends;
  };
  // The part of `stack`'s top frame: keyed by the frame alone, or with the frames under it where
  // a token's pushes could reach kMaxNesting.
  const FramePart& PartFor(const std::vector<Frame>& stack);
  // The part of a key; `text` is the frame's JsonGrammar::texts entry, or -1.
  const FramePart& PartForKey(const std::pair<Frame, size_t>& key, int32_t text);
  void Walk(int32_t node, size_t depth, FramePart& part);
  // The part of a string frame from its base's: a token is taken from the frame exactly when
  // another ending in the same frame from the base is, as their code points run the same pattern
  // steps and count alike. The leaving tokens are the base's, a superset, checked per stack.
  std::unique_ptr<FramePart> FromBase(const std::pair<Frame, size_t>& key, const FramePart& base);
  // The part of a string frame from a nearest state's (StringAutomaton::Nearest): its tokens of
  // at most k code points as they are, the longer ones by a walk of the trie's paths to them.
  std::unique_ptr<FramePart> FromNearest(const std::pair<Frame, size_t>& key, int32_t text);
  void ApplyEnds(const JsonMatcher& matcher, absl::Span<const int32_t> end_tokens,
                 TokenBits& bits) const;

  const JsonGrammar* grammar_;
  const TokenTrie* trie_;
  int32_t vocab_size_;
  size_t words_;
  std::vector<JsonMatcher> levels_;  // The walk's matcher per trie depth (capacity reused).
  size_t max_token_bytes_ = 0;       // A token pushes at most one frame per byte.
  // Per JsonGrammar::texts entry, each automaton state's representative (see above).
  std::vector<std::vector<int32_t>> representatives_;
  std::vector<std::vector<std::pair<int32_t, int>>> nearest_;  // Per texts entry and state.
  std::vector<int> reach_;        // Per token, the most code points it reads in a string.
  std::vector<int> reach_below_;  // Per trie node, the most of a token under it.
  int long_only_ = 0;             // While > 0, the walk takes only tokens reaching further.
  absl::flat_hash_map<std::pair<Frame, size_t>, std::unique_ptr<FramePart>> parts_;
  // While a string base is walked: the index in FramePart::ends of each end frame.
  absl::flat_hash_map<Frame, size_t>* ends_ = nullptr;
  absl::flat_hash_map<std::vector<Frame>, TokenBits> stacks_;
  int64_t frame_misses_ = 0;
  int64_t stack_misses_ = 0;
};

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_TOKEN_MASKER_H_
