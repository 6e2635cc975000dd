// Numeric bounds (number_bounds.h) against `jsonschema`: random bounds on integers and numbers,
// every candidate document judged by both. The matcher never takes an invalid number, takes
// every valid integer written plainly, and its random walks all validate.
#include "grammar/number_bounds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/grammar/grammar_test_util.h"

namespace arbor::grammar {
namespace {

using ::testing::HasSubstr;

// A bound as a schema writes it: an integer, or one with a fraction.
std::string RandomBound(std::mt19937_64& rng) {
  const int64_t whole = std::uniform_int_distribution<int64_t>(-60, 60)(rng);
  if (std::uniform_int_distribution<int>(0, 2)(rng) > 0) return std::to_string(whole);
  return absl::StrCat(whole, ".", std::uniform_int_distribution<int>(1, 9)(rng));
}

std::string RandomSchema(std::mt19937_64& rng, bool integer) {
  std::string schema = absl::StrCat(R"({"type": ")", integer ? "integer" : "number", "\"");
  const char* keywords[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
  for (const char* keyword : keywords) {
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
      absl::StrAppend(&schema, ", \"", keyword, "\": ", RandomBound(rng));
    }
  }
  if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) {
    absl::StrAppend(&schema, ", \"multipleOf\": ", std::uniform_int_distribution<int>(1, 7)(rng));
  }
  return schema + "}";
}

TEST(NumberBounds, TheMatcherAgreesWithJsonschemaOnRandomBounds) {
  std::mt19937_64 rng(TestSeed());
  std::vector<Judged> cases;
  for (int s = 0; s < 40; ++s) {
    const bool integer = s % 2 == 0;
    const std::string schema = RandomSchema(rng, integer);
    if (!CompileJsonSchema(schema).ok()) continue;  // Bounds nothing satisfies.
    for (int n = -70; n <= 70; ++n) {
      cases.push_back({.schema = schema, .document = std::to_string(n)});
      cases.push_back({.schema = schema, .document = absl::StrCat(n, ".5")});
      cases.push_back({.schema = schema, .document = absl::StrCat(n, ".0")});
    }
    for (const char* extra : {"-0", "-0.5", "1e1", "-1E-1", "0.25", "123456789012345"}) {
      cases.push_back({.schema = schema, .document = extra});
    }
  }
  Judge(cases);
  int accepted = 0;
  for (const Judged& c : cases) {
    EXPECT_TRUE(!c.accepted || c.valid) << c.schema << " took invalid " << c.document;
    const bool plain_integer = c.document.find_first_of(".eE") == std::string::npos;
    if (plain_integer) {
      EXPECT_EQ(c.accepted, c.valid) << c.schema << ": " << c.document;
    }
    accepted += c.accepted;
  }
  EXPECT_GT(accepted, 1000);
}

TEST(NumberBounds, WalksStayInBoundsAndEnd) {
  for (const char* schema :
       {R"({"type": "integer", "minimum": 100, "maximum": 130, "multipleOf": 7})",
        R"({"type": "integer", "exclusiveMinimum": -1000000000001})",
        R"({"type": "number", "minimum": -2.5, "exclusiveMaximum": 3})",
        R"({"type": "number", "minimum": 0})",
        R"({"properties": {"n": {"maximum": -5}}, "required": ["n"]})",
        R"({"type": "array", "items": {"type": "integer", "minimum": 999999999999990}})"}) {
    ExpectWalksValidate(schema, 40);
  }
}

TEST(NumberBounds, BoundsNothingSatisfiesAndFractionalMultiplesAreRefused) {
  EXPECT_THAT(CompileError(R"({"type": "integer", "minimum": 3, "maximum": 2.5})"),
              HasSubstr("no integer of at most 15 integer digits satisfies the numeric bounds"));
  EXPECT_THAT(CompileError(R"({"type": "integer", "minimum": 1e20})"),
              HasSubstr("satisfies the numeric bounds"));
  EXPECT_THAT(CompileError(R"({"type": "number", "multipleOf": 0.5})"),
              HasSubstr("at /multipleOf: keyword 'multipleOf' is supported with a positive "
                        "integer"));
  EXPECT_THAT(CompileError(R"({"type": "integer", "multipleOf": 0})"),
              HasSubstr("multipleOf: must be a number above 0"));
  EXPECT_THAT(CompileError(R"({"type": "integer", "minimum": "1"})"),
              HasSubstr("at /minimum: minimum: must be a number"));
  EXPECT_THAT(CompileError(R"({"type": "integer", "minimum": 5, "enum": [1, 2]})"),
              HasSubstr("enum: no value satisfies the schema's other keywords"));
  absl::StatusOr<JsonGrammar> grammar =
      CompileJsonSchema(R"({"minimum": 2, "enum": [1, 2, 3.5, "x"]})");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, "2"));
  EXPECT_TRUE(Accepts(*grammar, "3.5"));
  EXPECT_FALSE(Accepts(*grammar, "1"));
  EXPECT_FALSE(Accepts(*grammar, "\"x\""));  // Valid, but only numbers are generated here.
}

}  // namespace
}  // namespace arbor::grammar
