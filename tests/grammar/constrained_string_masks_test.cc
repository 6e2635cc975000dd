// Token masks of length-limited and pattern strings (token_masker.h): along random token walks of
// random schemas, the cached masks equal testing every token through the matcher, on a vocabulary
// whose tokens span many lengths (long whitespace and letter runs, multi-byte and split UTF-8,
// escapes, quotes that go on into the JSON around the string), so counts near both bounds meet
// tokens that cross them.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar/json_grammar.h"
#include "grammar/token_masker.h"
#include "grammar/token_trie.h"
#include "nlohmann/json.hpp"
#include "tests/grammar/mask_walk.h"
#include "tests/support/test_seed.h"

namespace arbor::grammar {
namespace {

std::vector<std::string> LongTokenVocabulary() {
  std::vector<std::string> tokens;
  for (char c = ' '; c < 127; ++c) tokens.push_back(std::string(1, c));
  for (int n = 2; n <= 48; ++n) {
    tokens.push_back(std::string(n, ' '));
    if (n % 3 == 0) tokens.push_back(std::string(n, 'a'));
    if (n % 5 == 0) tokens.push_back(std::string(n, '-'));
  }
  for (const char* t : {"ab",       "abc",      "bc",
                        "cb",       "\xC3\xA9", "\xC3",
                        "\xA9",     "a\xC3",    "\xE6\x97\xA5\xE6\x9C\xAC",
                        "\xE6\x97", "\xA5",     "\xF0\x9F\x98\x80",
                        "\xF0\x9F", "\x98\x80", "\\n",
                        "\\t",      "\\\"",     "\\",
                        "\"",       "\",",      "\"}",
                        "\"]",      "\", \"",   "a\"",
                        "aa\",",    "c\"}",     " \"",
                        "é\"",      "@ex",      ".com",
                        "abc@",     "2024-",    "-02-",
                        "12",       "x9"}) {
    tokens.push_back(t);
  }
  return tokens;
}

// A random string schema: lengths that may bind, optionally a pattern.
nlohmann::json RandomStringSchema(std::mt19937_64& rng) {
  // Fixed repeats count in the pattern's own states, told apart near their end as lengths are.
  static const char* kPatterns[] = {"^[a -]*$",
                                    "^a[a-c]*c?$",
                                    "^(ab|c)+$",
                                    "^[^\"\\\\]*$",
                                    "é|日本|a+",
                                    "^[0-9]{2,6}$",
                                    "^[a-z]{0,40}@[a-z]{1,30}$",
                                    "^ {0,50}a-{3,45}$",
                                    "^(a|é){5,35}$",
                                    "^[a-z]+@[a-z]+\\.com$"};
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  nlohmann::json schema = {{"type", "string"}};
  if (draw(0, 2) > 0) schema["maxLength"] = draw(0, 70);
  if (draw(0, 2) > 0) schema["minLength"] = draw(0, schema.value("maxLength", 70));
  if (draw(0, 1) > 0) schema["pattern"] = kPatterns[draw(0, std::size(kPatterns) - 1)];
  if (draw(0, 5) == 0) schema["format"] = "email";
  return schema;
}

// Walks `grammar` by random allowed tokens, checking each mask against the reference.
void CheckWalks(const JsonGrammar& grammar, const TokenTrie& trie, const std::string& schema,
                std::mt19937_64& rng) {
  TokenMasker masker(&grammar, &trie, trie.vocab_size());
  for (int walk = 0; walk < 6 && !::testing::Test::HasFatalFailure(); ++walk) {
    CheckMaskWalk(grammar, trie, masker, schema, std::uniform_int_distribution<int>(1, 60)(rng),
                  rng);
  }
}

TEST(ConstrainedStringMasks, EqualTheTokenByTokenReferenceOnRandomSchemas) {
  const TokenTrie trie(LongTokenVocabulary());
  std::mt19937_64 rng(TestSeed());
  int compiled = 0;
  for (int i = 0; i < 60; ++i) {
    nlohmann::json schema = {
        {"type", "object"}, {"properties", {{"s", RandomStringSchema(rng)}}}, {"required", {"s"}}};
    if (i % 3 == 0) schema = {{"type", "array"}, {"items", RandomStringSchema(rng)}};
    absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema.dump());
    if (!grammar.ok()) continue;  // A pattern no allowed length matches.
    ++compiled;
    CheckWalks(*grammar, trie, schema.dump(), rng);
    if (HasFailure()) return;
  }
  EXPECT_GT(compiled, 30);
}

// Counts at and above minLength share one walk of the trie per pattern position: a string of
// up to 60 code points walks it a few times, not once per count near the bound.
TEST(ConstrainedStringMasks, CountsAboveMinLengthShareTheirBasesWalk) {
  const TokenTrie trie(LongTokenVocabulary());
  absl::StatusOr<JsonGrammar> grammar =
      CompileJsonSchema(R"({"type": "string", "minLength": 1, "maxLength": 60})");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  TokenMasker masker(&*grammar, &trie, trie.vocab_size());
  JsonMatcher matcher(&*grammar);
  TokenBits bits;
  for (const char* token : {"\"", "a", "aaa", "      ", "\xC3\xA9", "aaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                            "                ", "a"}) {
    masker.Mask(matcher, {}, bits);
    ASSERT_TRUE(matcher.FeedAll(token)) << token;
  }
  masker.Mask(matcher, {}, bits);
  EXPECT_LE(masker.frame_misses(), 3);
}

}  // namespace
}  // namespace arbor::grammar
