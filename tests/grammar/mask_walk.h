// What the token masker's tests share: random walks through a compiled schema, one allowed token
// a step, that check every mask against the token-by-token reference on the way, through the
// masker alone or through the ConstraintState that decoding uses.
#ifndef ARBOR_TESTS_GRAMMAR_MASK_WALK_H_
#define ARBOR_TESTS_GRAMMAR_MASK_WALK_H_

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar/constraint.h"
#include "grammar/json_grammar.h"
#include "grammar/json_matcher.h"
#include "grammar/token_masker.h"
#include "grammar/token_trie.h"

namespace arbor::grammar {

// Walks up to `steps` tokens of `grammar` (token 0, " ", stands for the end token); fails the
// test, naming `schema` and the text so far, where the masker's mask differs from the reference.
inline void CheckMaskWalk(const JsonGrammar& grammar, const TokenTrie& trie, TokenMasker& masker,
                          const std::string& schema, int steps, std::mt19937_64& rng) {
  const std::vector<int32_t> ends = {0};
  JsonMatcher matcher(&grammar);
  std::string text;
  TokenBits fast, reference;
  for (int step = 0; step < steps; ++step) {
    masker.Mask(matcher, ends, fast);
    masker.MaskByEachToken(matcher, ends, reference);
    ASSERT_EQ(fast, reference) << schema << " after " << text;
    std::vector<int32_t> allowed;
    for (int32_t id = 1; id < trie.vocab_size(); ++id) {
      if (TestBit(fast, id)) allowed.push_back(id);
    }
    if (allowed.empty()) return;
    const int32_t token =
        allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
    ASSERT_TRUE(matcher.FeedAll(trie.bytes(token)));
    text += trie.bytes(token);
  }
}

// Walks `walks` random documents of `compiled` through a ConstraintState, up to `steps` tokens
// each (the trie's last token is the end token); fails the test, naming `schema` and the text so
// far, where the state's mask differs from the reference or allows nothing. The documents that
// ended go to `finished`.
template <typename Rng>
void CheckConstraintWalks(const std::shared_ptr<CompiledConstraint>& compiled,
                          const TokenTrie& trie, const std::string& schema, int walks, int steps,
                          Rng& rng, std::vector<std::string>& finished) {
  const std::vector<int32_t> ends = {trie.vocab_size() - 1};
  for (int walk = 0; walk < walks; ++walk) {
    ConstraintState state(compiled);
    JsonMatcher shadow(&compiled->grammar());
    std::string text;
    TokenBits fast, reference;
    for (int step = 0; step < steps; ++step) {
      state.Mask(ends, fast);
      compiled->masker().MaskByEachToken(shadow, ends, reference);
      ASSERT_EQ(fast, reference) << schema << "\nafter: " << text;
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < trie.vocab_size(); ++id) {
        if (TestBit(fast, id)) allowed.push_back(id);
      }
      ASSERT_FALSE(allowed.empty()) << schema << "\ndead end after: " << text;
      const int32_t token =
          allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      if (token == ends[0]) {
        finished.push_back(text);
        break;
      }
      ASSERT_TRUE(state.Add(token) && shadow.FeedAll(trie.bytes(token)));
      text += trie.bytes(token);
    }
  }
}

}  // namespace arbor::grammar

#endif  // ARBOR_TESTS_GRAMMAR_MASK_WALK_H_
