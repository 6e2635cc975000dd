// The JSON Schema grammar, its matcher and its token masks, against independent judges: Python's
// `jsonschema` decides which documents are valid (tests/grammar/json_schema_oracle.py), and masks
// computed through the trie and the caches are compared with testing every token on its own.
#include "grammar/json_grammar.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grammar/constraint.h"
#include "grammar/json_matcher.h"
#include "grammar/token_masker.h"
#include "grammar/token_trie.h"
#include "nlohmann/json.hpp"
#include "tests/grammar/grammar_test_util.h"
#include "tests/support/python_reference.h"
#include "tests/support/test_seed.h"

namespace arbor::grammar {
namespace {

using ::testing::HasSubstr;

TEST(JsonGrammar, RefusesWhatItCannotHonourNamingTheKeywordAndWhere) {
  EXPECT_THAT(CompileError(R"({"properties": {"name": {"type": "string", "pattern": "\\ba"}}})"),
              HasSubstr("at /properties/name/pattern: keyword 'pattern' is not supported so: a "
                        "word boundary \\b is not supported"));
  EXPECT_THAT(CompileError(R"({"type": "object", "patternProperties": {}})"),
              HasSubstr("at the schema's root: keyword 'patternProperties'"));
  EXPECT_THAT(CompileError(R"({"additionalProperties": {"type": "strnig"}})"),
              HasSubstr("at /additionalProperties/type: type: 'strnig' is not a JSON type"));
  EXPECT_THAT(CompileError(R"({"type": "array", "items": [{"type": "string"}]})"),
              HasSubstr("items: a list (draft 2019 tuples) is not supported"));
  EXPECT_THAT(CompileError(R"({"$ref": "https://example.com/s.json"})"),
              HasSubstr("Arbor does not fetch schemas; bundle the schema it names under $defs"));
  EXPECT_THAT(CompileError(R"({"oneOf": [{"type": "string"}, {"enum": ["a"]}]})"),
              HasSubstr("oneOf: no value is known to match one alternative only"));
  EXPECT_THAT(CompileError(
                  R"({"properties": {"a": {}}, "required": ["b"], "additionalProperties": false})"),
              HasSubstr("required: 'b' not among the properties, and additionalProperties is "
                        "false"));
  EXPECT_THAT(CompileError(R"({"$ref": "#"})"), HasSubstr("leads back to itself"));
  EXPECT_THAT(CompileError("false"), HasSubstr("accepts nothing"));
  EXPECT_THAT(CompileError("{\"type\": "), HasSubstr("is not valid JSON"));
  EXPECT_THAT(CompileError(R"({"type": "strnig"})"), HasSubstr("'strnig' is not a JSON type"));
  EXPECT_THAT(CompileError(std::string(200, '[') + std::string(200, ']')),
              HasSubstr("is nested deeper than 128 levels"));
  EXPECT_THAT(CompileError(R"({"type": "string", "enum": [1]})"),
              HasSubstr("value 1 is not of type string"));
}

// A keyword that restricts one type only is honoured by generating the schema's other types.
TEST(JsonGrammar, AOneTypeKeywordLeavesTheOtherTypes) {
  absl::StatusOr<JsonGrammar> grammar =
      CompileJsonSchema(R"({"contains": {"minimum": 5}, "format": "color", "maxLength": 3})");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, "{}"));
  EXPECT_TRUE(Accepts(*grammar, "-1.5"));
  EXPECT_FALSE(Accepts(*grammar, "[5]"));     // Arrays: contains is not compiled.
  EXPECT_FALSE(Accepts(*grammar, "\"a\""));  // Strings: this format is not compiled.
  EXPECT_THAT(CompileError(R"({"type": ["array", "string"], "contains": {}, "pattern": "\\1"})"),
              HasSubstr("keyword 'contains' is not supported on arrays, and the schema allows no "
                        "other type"));
  EXPECT_THAT(CompileError(R"({"properties": {"a": {"not": {"minimum": 1}}}})"),
              HasSubstr("at /properties/a: keyword 'not' is not supported"));
  // `not` that names types leaves the others; integers go with numbers.
  absl::StatusOr<JsonGrammar> other = CompileJsonSchema(R"({"not": {"type": ["integer", "null"]}})");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_TRUE(Accepts(*other, "true"));
  EXPECT_FALSE(Accepts(*other, "1.5"));
  EXPECT_FALSE(Accepts(*other, "null"));
  ExpectWalksValidate(R"({"not": {"type": ["integer", "null"]}})", 20);
}

// A property whose schema is false is never generated; items false leaves the empty array.
TEST(JsonGrammar, FalseSchemasOfPropertiesAndItemsAreAbsences) {
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(
      R"({"properties": {"a": false, "b": {"type": "array", "items": false, "maxItems": 1000000000}}})");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, R"({"b": []})"));
  EXPECT_FALSE(Accepts(*grammar, R"({"a": 1})"));
  EXPECT_FALSE(Accepts(*grammar, R"({"b": [1]})"));
  absl::StatusOr<JsonGrammar> nothing = CompileJsonSchema(R"({"properties": {"a": false}})");
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_TRUE(Accepts(*nothing, "{}"));
  EXPECT_FALSE(Accepts(*nothing, R"({"a": 1})"));  // No map of any keys either.
  EXPECT_THAT(CompileError(R"({"properties": {"a": false}, "required": ["a"]})"),
              HasSubstr("at /properties/a: the schema false accepts nothing"));
  // So is one whose schema accepts nothing otherwise, through references too.
  absl::StatusOr<JsonGrammar> refuted = CompileJsonSchema(
      R"({"properties": {"a": {"not": {}}, "b": {"$ref": "#/$defs/f"}, "c": {"type": "null"}},
          "$defs": {"f": false}, "maxItems": 2.0})");
  ASSERT_TRUE(refuted.ok()) << refuted.status();
  EXPECT_TRUE(Accepts(*refuted, R"({"c": null})"));
  EXPECT_FALSE(Accepts(*refuted, R"({"a": 1})"));
  EXPECT_FALSE(Accepts(*refuted, R"({"b": 1})"));
}

// anyOf is valid with any one alternative: of alternatives that start alike, the first is kept.
TEST(JsonGrammar, AnyOfKeepsTheFirstOfAlternativesThatStartAlike) {
  absl::StatusOr<JsonGrammar> grammar =
      CompileJsonSchema(R"({"anyOf": [{"type": "string", "maxLength": 1}, {"enum": ["abc", 1]}]})");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, "\"a\""));
  EXPECT_FALSE(Accepts(*grammar, "\"abc\""));  // Valid, but its alternative was dropped.
  EXPECT_FALSE(Accepts(*grammar, "1"));
}

TEST(JsonGrammar, GeneratesDeclaredPropertiesInOrderWithTheRequiredOnes) {
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(R"({
    "type": "object", "additionalProperties": false, "required": ["name", "age"],
    "properties": {"name": {"type": "string"}, "nick": {"type": "string"},
                   "age": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": [1, 12]},
                                                        "maxItems": 2}}})");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, R"({"name":"Ann","age":31})"));
  EXPECT_TRUE(
      Accepts(*grammar, R"({"name": "A\"n\u00e9", "nick": "x", "age": -0, "tags": [12, 1]})"));
  EXPECT_TRUE(Accepts(*grammar, "{\n  \"name\": \"\xC3\xA9\",\n  \"age\": 7\n}"));
  EXPECT_FALSE(Accepts(*grammar, R"({"age":31,"name":"Ann"})"));                // Out of order.
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"Ann"})"));                         // age missing.
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"Ann","age":3.5})"));               // Not an integer.
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"Ann","age":01})"));                // Leading zero.
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"Ann","age":1,"tags":[1,1,1]})"));  // maxItems.
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"Ann","age":1,"tags":[2]})"));      // Not in enum.
  EXPECT_FALSE(Accepts(*grammar, "{\"name\":\"a\x01\",\"age\":1}"));            // Raw control byte.
  EXPECT_FALSE(Accepts(*grammar, "{\"name\":\"\xC3\",\"age\":1}"));             // Cut UTF-8.
  EXPECT_TRUE(Accepts(*grammar, "{\n" + std::string(kMaxIndent, ' ') + R"("name":"a","age":1})"));
  EXPECT_FALSE(
      Accepts(*grammar, "{\n" + std::string(kMaxIndent + 1, ' ') + R"("name":"a","age":1})"));
  EXPECT_FALSE(Accepts(*grammar, R"({  "name":"a","age":1})"));       // Two spaces.
  EXPECT_FALSE(Accepts(*grammar, "{\r\n\"name\":\"a\",\"age\":1}"));  // A carriage return.
  EXPECT_FALSE(Accepts(*grammar, "{\n\n\"name\":\"a\",\"age\":1}"));  // A blank line.
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"Ann","age":1} )"));      // Nothing after.
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"Ann","age":1)"));        // Not closed.
}

// A required name that is not declared follows the declared properties, with a value of
// additionalProperties' schema.
TEST(JsonGrammar, RequiredNamesNotDeclaredComeLastWithAdditionalValues) {
  const std::string schema = R"({"properties": {"a": {"type": "null"}}, "required": ["c", "b", "c"],
                                 "additionalProperties": {"type": "integer"}})";
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, R"({"a":null,"c":1,"b":2})"));
  EXPECT_TRUE(Accepts(*grammar, R"({"c":1,"b":2})"));
  EXPECT_FALSE(Accepts(*grammar, R"({"c":1})"));
  EXPECT_FALSE(Accepts(*grammar, R"({"c":"x","b":2})"));
  ExpectWalksValidate(schema, 20);
}

// prefixItems: each position its own schema, then items (false: no more).
TEST(JsonGrammar, PrefixItemsGiveEachPositionItsSchema) {
  const std::string tuple = R"({"type": "array", "minItems": 1,
    "prefixItems": [{"type": "integer"}, {"type": "string", "maxLength": 1}], "items": false})";
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(tuple);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, R"([1, "a"])"));
  EXPECT_TRUE(Accepts(*grammar, "[1]"));
  EXPECT_FALSE(Accepts(*grammar, "[]"));
  EXPECT_FALSE(Accepts(*grammar, R"(["a", 1])"));
  EXPECT_FALSE(Accepts(*grammar, R"([1, "a", 2])"));
  ExpectWalksValidate(tuple, 20);
  const std::string rest = R"({"prefixItems": [{"const": "x"}], "items": {"type": "null"},
                              "minItems": 3})";
  ASSERT_TRUE(CompileJsonSchema(rest).ok());
  EXPECT_TRUE(Accepts(*CompileJsonSchema(rest), R"(["x", null, null, null])"));
  EXPECT_FALSE(Accepts(*CompileJsonSchema(rest), R"(["x", null])"));
  ExpectWalksValidate(rest, 20);
}

// enum and const of arrays and objects are literals too, written compactly.
TEST(JsonGrammar, EnumsOfArraysAndObjects) {
  const std::string schema = R"({"enum": [[1, "a"], {"k": [null, {}]}, 2], "type": ["array",
                                 "object", "integer"]})";
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, R"([1,"a"])"));
  EXPECT_TRUE(Accepts(*grammar, R"({"k":[null,{}]})"));
  EXPECT_FALSE(Accepts(*grammar, R"([1,"b"])"));
  ExpectWalksValidate(schema, 10);
}

TEST(JsonGrammar, AMapTakesAnyKeysWithValuesOfItsAdditionalProperties) {
  absl::StatusOr<JsonGrammar> map =
      CompileJsonSchema(R"({"type": "object", "additionalProperties": {"type": "integer"}})");
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_TRUE(Accepts(*map, R"({"a": 1, "b c": -2, "a": 3})"));
  EXPECT_TRUE(Accepts(*map, "{}"));
  EXPECT_FALSE(Accepts(*map, R"({"a": "1"})"));
  EXPECT_FALSE(Accepts(*map, R"({"a": 1.5})"));
}

TEST(JsonGrammar, TopLevelNumbersAndLiteralsEndWhereTheyMay) {
  absl::StatusOr<JsonGrammar> number = CompileJsonSchema(R"({"type": "number"})");
  ASSERT_TRUE(number.ok());
  EXPECT_TRUE(Accepts(*number, "-12.5e+3"));
  EXPECT_FALSE(Accepts(*number, "-12.5e"));
  EXPECT_FALSE(Accepts(*number, std::string(kMaxNumberDigits + 1, '7')));
  absl::StatusOr<JsonGrammar> choice = CompileJsonSchema(R"({"enum": [12, 1, "x"]})");
  ASSERT_TRUE(choice.ok());
  for (const char* ok : {"1", "12", "\"x\""}) EXPECT_TRUE(Accepts(*choice, ok)) << ok;
  for (const char* bad : {"2", "123", "\"x", "\"xy\""}) EXPECT_FALSE(Accepts(*choice, bad)) << bad;
}

TEST(JsonGrammar, AnyObjectTakesAnyJsonObjectAndRecursiveRefsNest) {
  const JsonGrammar any = AnyJsonObjectGrammar();
  EXPECT_TRUE(Accepts(any, R"({"a": [1, {"b": null}, "c", true, -0.5e2], "d": {}})"));
  EXPECT_FALSE(Accepts(any, "[1]"));
  EXPECT_FALSE(Accepts(any, R"({"a": tru})"));
  EXPECT_FALSE(Accepts(any, std::string(kMaxNesting, '[') + std::string(kMaxNesting, ']')));
  absl::StatusOr<JsonGrammar> tree = CompileJsonSchema(R"({
    "$defs": {"node": {"type": "object", "required": ["v"], "additionalProperties": false,
              "properties": {"v": {"type": "integer"},
                             "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
    "$ref": "#/$defs/node"})");
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_TRUE(Accepts(*tree, R"({"v":1,"kids":[{"v":2,"kids":[{"v":3}]},{"v":4}]})"));
  EXPECT_FALSE(Accepts(*tree, R"({"v":1,"kids":[{"kids":[]}]})"));
}

// Random schemas with documents jsonschema accepts and documents it rejects: the matcher agrees
// on every one.
TEST(JsonGrammar, AgreesWithJsonschemaOnRandomSchemas) {
  const nlohmann::json answer = testing::RunPythonReference(
      kOracle, {{"op", "cases"}, {"seed", TestSeed()}, {"count", 80}});
  ASSERT_TRUE(answer.is_object());
  int valid = 0, invalid = 0;
  for (const nlohmann::json& c : answer["cases"]) {
    const std::string schema = c["schema"];
    absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
    ASSERT_TRUE(grammar.ok()) << schema << ": " << grammar.status();
    for (const std::string document : c["valid"]) {
      EXPECT_TRUE(Accepts(*grammar, document)) << schema << "\nrefused: " << document;
      ++valid;
    }
    for (const std::string document : c["invalid"]) {
      EXPECT_FALSE(Accepts(*grammar, document)) << schema << "\naccepted: " << document;
      ++invalid;
    }
  }
  EXPECT_GT(valid, 400);
  EXPECT_GT(invalid, 400);
}

// A byte-level vocabulary like a BPE one: every byte, JSON punctuation runs, words, numbers and
// multi-byte characters, some tokens ending one value and opening the next; id 0 is special
// (empty) and the last id is the end token.
std::vector<std::string> TestVocabulary(std::mt19937& rng) {
  std::vector<std::string> vocab = {""};
  for (int b = 1; b < 256; ++b) vocab.push_back(std::string(1, static_cast<char>(b)));
  const std::vector<std::string> pieces = {
      "{\"",  "\":",   "\": ",  "\",",     "\"}",    "\"]",      "},",           "}]",   "]}",
      ", \"", ",\"",   "[{",    "true",    "false",  "null",     "nul",          "12",   "0.",
      "e-",   "-1",    "123",   "\\n",     "\\\"",   "\\u00",    "name",         "age",  "id",
      "tags", "score", "kind",  "a\\\"b",  "x y",    "\xC3\xA9", "\xE6\x97\xA5", "\n  ", "  ",
      "\n\t", "red",   "green", "\"red\"", "blue\"", "fixed",    " \"",          "\":\""};
  for (const std::string& p : pieces) vocab.push_back(p);
  std::uniform_int_distribution<int> pick(0, static_cast<int>(pieces.size()) - 1);
  for (int i = 0; i < 400; ++i) vocab.push_back(pieces[pick(rng)] + pieces[pick(rng)]);
  vocab.push_back("");  // The end token.
  return vocab;
}

TEST(TokenTrie, ListsEveryTokenUnderTheNodeOfEachPrefix) {
  std::mt19937 rng(TestSeed());
  const std::vector<std::string> vocab = TestVocabulary(rng);
  const TokenTrie trie(vocab);
  int visited = 0;
  std::vector<std::pair<int32_t, std::string>> stack = {{TokenTrie::kRoot, ""}};
  while (!stack.empty()) {
    auto [node, prefix] = stack.back();
    stack.pop_back();
    ++visited;
    std::vector<int32_t> under(trie.TokensUnder(node).begin(), trie.TokensUnder(node).end());
    std::vector<int32_t> expected;
    for (int32_t id = 0; id < static_cast<int32_t>(vocab.size()); ++id) {
      if (!vocab[id].empty() && vocab[id].compare(0, prefix.size(), prefix) == 0) {
        expected.push_back(id);
      }
    }
    std::sort(under.begin(), under.end());
    ASSERT_EQ(under, expected) << "prefix '" << prefix << "'";
    for (int32_t id : trie.TokensEndingAt(node)) EXPECT_EQ(vocab[id], prefix);
    for (int32_t c = trie.first_child(node); c >= 0; c = trie.next_sibling(c)) {
      stack.push_back({c, prefix + static_cast<char>(trie.byte(c))});
    }
  }
  EXPECT_EQ(visited, trie.num_nodes());
}

// Random walks through random schemas, each token drawn from the mask: the fast mask equals
// testing every token at every step, and every finished document validates.
TEST(TokenMasker, MasksEqualTheTokenByTokenReferenceAndWalksStayValid) {
  const unsigned seed = TestSeed();
  std::mt19937 rng(seed);
  const auto trie = std::make_shared<const TokenTrie>(TestVocabulary(rng));
  const int32_t vocab = trie->vocab_size() + 3;  // The model's rows may be wider.
  const std::vector<int32_t> ends = {trie->vocab_size() - 1};
  const nlohmann::json answer =
      testing::RunPythonReference(kOracle, {{"op", "cases"}, {"seed", seed}, {"count", 40}});
  ASSERT_TRUE(answer.is_object());
  nlohmann::json items = nlohmann::json::array();
  int steps = 0;
  for (const nlohmann::json& c : answer["cases"]) {
    const std::string schema = c["schema"];
    absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
    ASSERT_TRUE(grammar.ok()) << grammar.status();
    auto compiled = std::make_shared<CompiledConstraint>(*grammar, trie, vocab);
    for (int walk = 0; walk < 4; ++walk) {
      ConstraintState state(compiled);
      JsonMatcher shadow(&compiled->grammar());
      std::string text;
      TokenBits fast, reference;
      for (int step = 0; step < 120; ++step, ++steps) {
        state.Mask(ends, fast);
        compiled->masker().MaskByEachToken(shadow, ends, reference);
        ASSERT_EQ(fast, reference) << schema << "\nafter: " << text;
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < vocab; ++id) {
          if (TestBit(fast, id)) allowed.push_back(id);
        }
        ASSERT_FALSE(allowed.empty()) << schema << "\ndead end after: " << text;
        const int32_t token =
            allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
        if (token == ends[0]) {
          items.push_back({{"schema", schema}, {"document", text}});
          break;
        }
        ASSERT_TRUE(state.Add(token));
        ASSERT_TRUE(shadow.FeedAll(trie->bytes(token)));
        text += trie->bytes(token);
      }
    }
  }
  ASSERT_GT(items.size(), 20u) << "too few walks finished to judge";
  ExpectAllValid(items);
  RecordProperty("steps", steps);
}

// Near kMaxNesting a token that opens values (`[[`, `{"`) is refused by the whole stack though
// its top frame alone would take it: the fast mask must say so at every depth, reached one `[`
// at a time and with multi-byte openers, for an untyped array and for any JSON value.
TEST(TokenMasker, MasksNearTheNestingLimitEqualTheReference) {
  const TokenTrie trie({"[", "[[", "[[[[", "{\"", "\"", "1", "]", "]]", "true", "a"});
  const std::vector<int32_t> ends;
  for (const std::string schema : {R"({"type":"array"})", "{}"}) {
    absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
    ASSERT_TRUE(grammar.ok()) << grammar.status();
    TokenMasker masker(&*grammar, &trie, trie.vocab_size());
    JsonMatcher matcher(&*grammar);
    TokenBits fast, reference;
    size_t depth = 0;
    for (; depth <= kMaxNesting; ++depth) {
      masker.Mask(matcher, ends, fast);
      masker.MaskByEachToken(matcher, ends, reference);
      ASSERT_EQ(fast, reference) << schema << " at depth " << depth;
      if (!matcher.FeedAll("[")) break;
    }
    EXPECT_EQ(depth, kMaxNesting) << "the limit is where the walk stopped";
    EXPECT_FALSE(TestBit(fast, 0)) << "no `[` past the limit";
  }
}

TEST(ConstraintState, RefusesATokenTheGrammarDoesNotAllowAndKeepsItsState) {
  const auto trie = std::make_shared<const TokenTrie>(
      std::vector<std::string>{"{", "}", "\"a\"", ":", "1", "x", ""});
  absl::StatusOr<JsonGrammar> grammar = CompileConstraint(
      {.json_schema = R"({"type":"object","properties":{"a":{"type":"integer"}}})"});
  ASSERT_TRUE(grammar.ok());
  ConstraintState state(std::make_shared<CompiledConstraint>(*grammar, trie, 7));
  EXPECT_TRUE(state.Add(0));
  EXPECT_FALSE(state.Add(5));  // "x"
  EXPECT_FALSE(state.Add(6));  // Special (no bytes).
  EXPECT_TRUE(state.Add(2));
  EXPECT_TRUE(state.Add(3));
  EXPECT_TRUE(state.Add(4));
  EXPECT_FALSE(state.Complete());
  EXPECT_TRUE(state.Add(1));
  EXPECT_TRUE(state.Complete());
  TokenBits bits;
  const std::vector<int32_t> ends = {6};
  state.Mask(ends, bits);
  EXPECT_EQ(bits, TokenBits{uint64_t{1} << 6});  // Only the end.
}

}  // namespace
}  // namespace arbor::grammar
