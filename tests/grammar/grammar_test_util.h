// What the keyword tests of the JSON Schema grammar share: compile or fail, whether the matcher
// takes a whole document, and random matcher walks judged by Python's `jsonschema`
// (tests/grammar/json_schema_oracle.py).
#ifndef ARBOR_TESTS_GRAMMAR_GRAMMAR_TEST_UTIL_H_
#define ARBOR_TESTS_GRAMMAR_GRAMMAR_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "grammar/json_grammar.h"
#include "grammar/json_matcher.h"
#include "grammar/random_document.h"
#include "nlohmann/json.hpp"
#include "tests/support/python_reference.h"
#include "tests/support/test_seed.h"

namespace arbor::grammar {

inline constexpr char kOracle[] = "tests/grammar/json_schema_oracle.py";

inline bool Accepts(const JsonGrammar& grammar, const std::string& document) {
  JsonMatcher matcher(&grammar);
  return matcher.FeedAll(document) && matcher.AcceptsEnd();
}

// The compile error's message ("" with a test failure when the schema compiles).
inline std::string CompileError(const std::string& schema) {
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
  EXPECT_FALSE(grammar.ok()) << schema;
  return grammar.ok() ? "" : std::string(grammar.status().message());
}

// A document with its schema, what the matcher said and what `jsonschema` says.
struct Judged {
  std::string schema;
  std::string document;
  bool accepted = false;
  bool valid = false;
};

// Each of `documents` through `schema`'s matcher, then judged by `jsonschema` in one call.
inline void Judge(std::vector<Judged>& cases) {
  nlohmann::json items = nlohmann::json::array();
  for (Judged& c : cases) {
    absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(c.schema);
    ASSERT_TRUE(grammar.ok()) << c.schema << ": " << grammar.status();
    c.accepted = Accepts(*grammar, c.document);
    items.push_back({{"schema", c.schema}, {"document", c.document}});
  }
  const nlohmann::json judged =
      testing::RunPythonReference(kOracle, {{"op", "validate"}, {"items", items}});
  ASSERT_TRUE(judged.is_object());
  for (size_t i = 0; i < cases.size(); ++i) cases[i].valid = judged["results"][i] == "";
}

// `items` ({schema, document} pairs) judged by `jsonschema` in one call: every one is valid.
inline void ExpectAllValid(const nlohmann::json& items) {
  const nlohmann::json judged =
      testing::RunPythonReference(kOracle, {{"op", "validate"}, {"items", items}});
  ASSERT_TRUE(judged.is_object());
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(judged["results"][i], "") << items[i]["schema"] << "\n" << items[i]["document"];
  }
}

// `count` random walks through `schema`'s matcher: every one ends, and `jsonschema` accepts
// every document.
inline void ExpectWalksValidate(const std::string& schema, int count = 60) {
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
  ASSERT_TRUE(grammar.ok()) << schema << ": " << grammar.status();
  std::mt19937_64 rng(TestSeed());
  nlohmann::json items = nlohmann::json::array();
  for (int i = 0; i < count; ++i) {
    std::optional<std::string> document =
        RandomDocument(*grammar, rng, std::uniform_int_distribution<size_t>(0, 120)(rng));
    ASSERT_TRUE(document.has_value()) << schema << ": a walk did not end";
    items.push_back({{"schema", schema}, {"document", *document}});
  }
  ExpectAllValid(items);
}

}  // namespace arbor::grammar

#endif  // ARBOR_TESTS_GRAMMAR_GRAMMAR_TEST_UTIL_H_
