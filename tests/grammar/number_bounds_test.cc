// Numeric bounds (number_bounds.h) against `jsonschema`: random bounds on integers and numbers,
// every candidate document judged by both. The matcher never takes an invalid number, takes
// every valid number written plainly (no exponent, at most 15 significant digits), and its random
// walks all end and validate, fractional bounds and ranges holding no integer included.
#include "grammar/number_bounds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grammar/constraint.h"
#include "grammar/json_matcher.h"
#include "grammar/token_masker.h"
#include "grammar/token_trie.h"
#include "tests/grammar/grammar_test_util.h"
#include "tests/grammar/mask_walk.h"

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
    // Integers and `multipleOf` write no fraction (60.0 is a valid integer, yet not generated).
    const bool fractions = c.schema.find("number") != std::string::npos &&
                           c.schema.find("multipleOf") == std::string::npos;
    if (c.document.find_first_of(fractions ? "eE" : ".eE") == std::string::npos) {
      EXPECT_EQ(c.accepted, c.valid) << c.schema << ": " << c.document;
    }
    accepted += c.accepted;
  }
  EXPECT_GT(accepted, 1000);
}

// A decimal with 0 to 6 fraction digits as a schema writes it, in units of 10^-7.
int64_t RandomDecimal(std::mt19937_64& rng) {
  const int digits = std::uniform_int_distribution<int>(0, 6)(rng);
  int64_t unit = 10'000'000;
  for (int i = 0; i < digits; ++i) unit /= 10;
  const int64_t magnitude =
      std::uniform_int_distribution<int64_t>(0, 30 * 10'000'000 / unit)(rng) * unit;
  return std::uniform_int_distribution<int>(0, 1)(rng) == 0 ? -magnitude : magnitude;
}

// `units` of 10^-7 as the shortest plain decimal text.
std::string DecimalText(int64_t units) {
  const int64_t magnitude = units < 0 ? -units : units;
  std::string fraction = std::to_string(10'000'000 + magnitude % 10'000'000).substr(1);
  while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  return absl::StrCat(units < 0 ? "-" : "", magnitude / 10'000'000, fraction.empty() ? "" : ".",
                      fraction);
}

// A number schema with fractional bounds, and the bounds' values in units of 10^-7. Half of them
// are narrower than 1, most of those holding no integer.
std::string RandomFractionalSchema(std::mt19937_64& rng, std::vector<int64_t>& values) {
  const int64_t low = RandomDecimal(rng);
  const bool narrow = std::uniform_int_distribution<int>(0, 1)(rng) == 0;
  const int64_t width = narrow ? std::uniform_int_distribution<int64_t>(1, 9'999'999)(rng)
                               : std::abs(RandomDecimal(rng)) + 10'000'000;
  values = {low, low + width};
  auto keyword = [&](const char* inclusive, const char* exclusive, int64_t value) {
    const bool strict = std::uniform_int_distribution<int>(0, 1)(rng) == 0;
    return absl::StrCat(", \"", strict ? exclusive : inclusive, "\": ", DecimalText(value));
  };
  std::string schema = R"({"type": "number")";
  if (!narrow && std::uniform_int_distribution<int>(0, 3)(rng) == 0) values.pop_back();
  absl::StrAppend(&schema, keyword("minimum", "exclusiveMinimum", values[0]));
  if (values.size() == 2) {
    absl::StrAppend(&schema, keyword("maximum", "exclusiveMaximum", values[1]));
  }
  return schema + "}";
}

// A random walk through `grammar`'s number, one byte at a time among those the matcher takes,
// ending where it may; nothing (with a failure) where it can neither go on nor end.
std::optional<std::string> WalkNumber(const JsonGrammar& grammar, std::mt19937_64& rng) {
  JsonMatcher matcher(&grammar);
  std::string document;
  while (true) {
    std::vector<std::pair<char, JsonMatcher>> next;
    for (char byte : std::string("-.0123456789")) {
      JsonMatcher copy = matcher;
      if (copy.Feed(byte) == JsonMatcher::Fed::kAccepted) next.emplace_back(byte, copy);
    }
    const bool end = matcher.AcceptsEnd();
    if (next.empty() && !end) {
      ADD_FAILURE() << "stuck after " << document;
      return std::nullopt;
    }
    if (next.empty() || (end && std::uniform_int_distribution<int>(0, 3)(rng) == 0)) {
      return document;
    }
    const auto& [byte, state] =
        next[std::uniform_int_distribution<size_t>(0, next.size() - 1)(rng)];
    document.push_back(byte);
    matcher = state;
  }
}

TEST(NumberBounds, FractionalBoundsWalksEndInBounds) {
  std::mt19937_64 rng(TestSeed());
  std::vector<Judged> cases;
  for (int s = 0; s < 60; ++s) {
    std::vector<int64_t> values;
    const std::string schema = RandomFractionalSchema(rng, values);
    absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
    ASSERT_TRUE(grammar.ok()) << schema << ": " << grammar.status();
    for (int w = 0; w < 40; ++w) {
      const std::optional<std::string> document = WalkNumber(*grammar, rng);
      ASSERT_TRUE(document.has_value()) << schema;
      cases.push_back({.schema = schema, .document = *document});
    }
  }
  Judge(cases);
  for (const Judged& c : cases) {
    EXPECT_TRUE(c.accepted && c.valid) << c.schema << " generated " << c.document;
  }
}

// Every decimal of a grid around the bounds (steps of 10^-g for g up to 7, so finer than any
// bound) is taken exactly when `jsonschema` accepts it.
TEST(NumberBounds, FractionalBoundsTakeEveryValidDecimalOfAGrid) {
  std::mt19937_64 rng(TestSeed());
  std::vector<Judged> cases;
  for (int s = 0; s < 25; ++s) {
    std::vector<int64_t> values;
    const std::string schema = RandomFractionalSchema(rng, values);
    for (int64_t value : values) {
      for (int64_t step = 1; step <= 10'000'000; step *= 10) {
        for (int64_t j = -6; j <= 6; ++j) {
          cases.push_back({.schema = schema, .document = DecimalText(value + j * step)});
        }
      }
    }
  }
  Judge(cases);
  int valid = 0;
  for (const Judged& c : cases) {
    EXPECT_EQ(c.accepted, c.valid) << c.schema << ": " << c.document;
    valid += c.valid;
  }
  EXPECT_GT(valid, 1000);
}

// Tokens of several digits, points and closers (`5]`, `0.0`, `1,`), so a token can cross a
// bound's digits and end the number inside it; every single byte too, and the end token last.
std::vector<std::string> NumberVocabulary(std::mt19937_64& rng) {
  std::vector<std::string> vocab = {""};
  for (int b = 1; b < 256; ++b) vocab.push_back(std::string(1, static_cast<char>(b)));
  const std::string bytes = "0123456789.-,] ";
  for (int i = 0; i < 300; ++i) {
    std::string token;
    for (int n = std::uniform_int_distribution<int>(2, 5)(rng); n > 0; --n) {
      token.push_back(bytes[std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng)]);
    }
    vocab.push_back(token);
  }
  vocab.push_back("");
  return vocab;
}

// Arrays of fractionally bounded numbers through the token masker: at every step of random
// walks the fast mask equals feeding each token, and every finished document validates.
TEST(NumberBounds, TokenMasksOfFractionalBoundsAreExact) {
  std::mt19937_64 rng(TestSeed());
  const auto trie = std::make_shared<const TokenTrie>(NumberVocabulary(rng));
  std::vector<Judged> cases;
  for (int s = 0; s < 12; ++s) {
    std::vector<int64_t> values;
    const std::string schema =
        absl::StrCat(R"({"type": "array", "items": )", RandomFractionalSchema(rng, values), "}");
    absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
    ASSERT_TRUE(grammar.ok()) << schema << ": " << grammar.status();
    auto compiled = std::make_shared<CompiledConstraint>(*grammar, trie, trie->vocab_size());
    std::vector<std::string> documents;
    CheckConstraintWalks(compiled, *trie, schema, /*walks=*/6, /*steps=*/60, rng, documents);
    if (HasFatalFailure()) return;
    for (std::string& document : documents) {
      cases.push_back({.schema = schema, .document = std::move(document)});
    }
  }
  ASSERT_GT(cases.size(), 10u) << "too few walks finished to judge";
  Judge(cases);
  for (const Judged& c : cases) {
    EXPECT_TRUE(c.accepted && c.valid) << c.schema << " generated " << c.document;
  }
}

TEST(NumberBounds, RangesHoldingNoIntegerAreWrittenExactly) {
  struct Case {
    const char* schema;
    std::vector<const char*> taken;
    std::vector<const char*> refused;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1})",
            {"0.5", "0.000000000000001", "0.999999999999999", "0.10"},
            {"0", "0.0", "0.000", "1", "1.0", "-0.5", "0.0000000000000001"}},
           {R"({"type": "number", "minimum": 0.1, "maximum": 0.9})",
            {"0.1", "0.9", "0.100", "0.55"},
            {"0.09", "0.900000000000001", "0"}},
           {R"({"type": "number", "minimum": 2.5, "maximum": 2.75})",
            {"2.5", "2.75", "2.6"},
            {"2.4", "2.76", "2", "3"}},
           {R"({"type": "number", "minimum": -1, "exclusiveMaximum": 0})",
            {"-1", "-0.5", "-1.0", "-0.000000000000001"},
            {"-0", "-0.0", "0", "-1.01", "0.5"}},
           {R"({"type": "number", "exclusiveMinimum": 0.5})",
            {"0.7", "1", "0.500000000000001"},
            {"0.5", "0.50", "0.4"}},
           // 999999999999999.99 parses to 1e15 itself.
           {R"({"type": "number", "exclusiveMaximum": 1e15})",
            {"999999999999999.9", "-999999999999999.999999999999999"},
            {"999999999999999.99"}},
           {R"({"type": "number", "minimum": -0.0, "maximum": 0})",
            {"0", "-0", "0.0", "-0.000"},
            {"0.1", "-0.000000000000001"}},
       }) {
    absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(c.schema);
    ASSERT_TRUE(grammar.ok()) << c.schema << ": " << grammar.status();
    for (const char* document : c.taken) EXPECT_TRUE(Accepts(*grammar, document)) << document;
    for (const char* document : c.refused) EXPECT_FALSE(Accepts(*grammar, document)) << document;
  }
  EXPECT_THAT(
      CompileError(R"({"properties": {"p": {"exclusiveMinimum": 0, "exclusiveMaximum": 1e-20}}})"),
      HasSubstr("at /properties/p: no number of at most 15 integer and 15 fraction digits "
                "satisfies the numeric bounds (exclusiveMinimum 0, exclusiveMaximum 1e-20)"));
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
