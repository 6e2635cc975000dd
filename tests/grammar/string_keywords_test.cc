// String keywords (string_keywords.h) against `jsonschema`: lengths in code points whatever the
// UTF-8 width or escape of each character, random walks that all validate, and the refusals.
#include "grammar/string_keywords.h"

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

// Characters as a JSON string writes them: ASCII, 2-, 3- and 4-byte UTF-8, and short escapes.
const char* const kCharacters[] = {"a", " ", "\xC3\xA9", "\xE6\x97\xA5", "\xF0\x9F\x99\x82",
                                   "\\n", "\\\"", "\\\\", "\\/", "\\t"};

TEST(StringKeywords, LengthsCountCodePointsAsJsonschemaDoes) {
  std::mt19937_64 rng(TestSeed());
  std::vector<Judged> cases;
  for (int s = 0; s < 12; ++s) {
    const int min = std::uniform_int_distribution<int>(0, 4)(rng);
    const int max = min + std::uniform_int_distribution<int>(0, 3)(rng);
    std::string schema = R"({"type": "string")";
    if (s % 3 != 1) absl::StrAppend(&schema, R"(, "minLength": )", min);
    if (s % 3 != 2) absl::StrAppend(&schema, R"(, "maxLength": )", max);
    schema += "}";
    for (int d = 0; d < 40; ++d) {
      std::string document = "\"";
      const int length = std::uniform_int_distribution<int>(0, 8)(rng);
      for (int i = 0; i < length; ++i) {
        document += kCharacters[std::uniform_int_distribution<size_t>(0, 9)(rng)];
      }
      cases.push_back({.schema = schema, .document = document + "\""});
    }
  }
  Judge(cases);
  for (const Judged& c : cases) {
    EXPECT_EQ(c.accepted, c.valid) << c.schema << ": " << c.document;
  }
  for (const char* schema : {R"({"type": "string", "minLength": 3, "maxLength": 5})",
                             R"({"type": "string", "minLength": 2})",
                             R"({"properties": {"s": {"maxLength": 1}}, "required": ["s"]})"}) {
    ExpectWalksValidate(schema, 40);
  }
}

TEST(StringKeywords, ConstrainedStringsTakeNoUnicodeEscapesAndBoundsMustMeet) {
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(R"({"maxLength": 2})");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, R"("ab")"));
  EXPECT_FALSE(Accepts(*grammar, R"("\u0061")"));  // Valid, but written raw when constrained.
  EXPECT_FALSE(Accepts(*grammar, R"("abc")"));
  EXPECT_THAT(CompileError(R"({"type": "string", "minLength": 3, "maxLength": 2})"),
              HasSubstr("at the schema's root: minLength: exceeds maxLength"));
  EXPECT_THAT(CompileError(R"({"type": "string", "minLength": -1})"),
              HasSubstr("at /minLength: minLength: must be a non-negative integer"));
  EXPECT_THAT(CompileError(R"({"type": "array", "uniqueItems": true})"),
              HasSubstr("keyword 'uniqueItems' is not supported"));
}

}  // namespace
}  // namespace arbor::grammar
