// Numbers a double cannot hold are generated exactly as the schema writes them, and the
// constraint cache finds a schema by its content whatever its spacing.
#include "grammar/exact_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/constraint.h"
#include "grammar/json_grammar.h"
#include "grammar/json_matcher.h"
#include "grammar/token_trie.h"

namespace arbor::grammar {
namespace {

using ::testing::HasSubstr;

bool Accepts(const JsonGrammar& grammar, const std::string& document) {
  JsonMatcher matcher(&grammar);
  return matcher.FeedAll(document) && matcher.AcceptsEnd();
}

TEST(ExactJson, KeepsTheDigitsOfNumbersBeyondADouble) {
  const std::string text =
      R"({"a":12345678901234567890123,"b":[-98765432109876543210.0,1.5e300],"c":9007199254740993,)"
      R"("d":18446744073709551615,"e":0.5,"f":"s"})";
  absl::StatusOr<nlohmann::ordered_json> parsed = ParseExactJson(text, 8);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(IsExactNumber((*parsed)["a"]));
  EXPECT_FALSE(IsExactNumber((*parsed)["e"]));
  EXPECT_EQ(DumpExactJson(*parsed), text);
  EXPECT_THAT(std::string(ParseExactJson("[[[]]]", 2).status().message()),
              HasSubstr("nested deeper than 2 levels"));
  EXPECT_THAT(std::string(ParseExactJson("{\"a\":", 8).status().message()),
              HasSubstr("not valid JSON"));
  // A repeated key keeps its place and its last value, as nlohmann's parser does.
  EXPECT_EQ(DumpExactJson(*ParseExactJson(R"({"k":1,"j":2,"k":3})", 8)), R"({"k":3,"j":2})");
}

TEST(ExactJson, ConstAndEnumIntegersAboveTwoToThe64AreGeneratedAsWritten) {
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(
      R"({"type":"object","properties":{"n":{"type":"integer","const":12345678901234567890123},)"
      R"("m":{"enum":[-340282366920938463463374607431768211457,7]}},"required":["n","m"]})");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar,
                      R"({"n":12345678901234567890123,"m":-340282366920938463463374607431768211457})"));
  EXPECT_TRUE(Accepts(*grammar, R"({"n":12345678901234567890123,"m":7})"));
  EXPECT_FALSE(Accepts(*grammar, R"({"n":1.2345678901234568e+22,"m":7})"));
  EXPECT_FALSE(Accepts(*grammar, R"({"n":12345678901234567000000,"m":7})"));
}

TEST(ConstraintCache, FindsASchemaByItsContentWhateverItsSpacing) {
  const auto trie = std::make_shared<const TokenTrie>(std::vector<std::string>{"{", "}", ""});
  ConstraintCache cache(trie, 3);
  auto first = cache.Get({.json_schema = R"({"type":"object","properties":{"a":{}}})"});
  auto spaced = cache.Get({.json_schema = "{ \"type\": \"object\",\n \"properties\": {\"a\": {}} }"});
  auto other = cache.Get({.json_schema = R"({"type":"object","properties":{"b":{}}})"});
  ASSERT_TRUE(first.ok() && spaced.ok() && other.ok());
  EXPECT_EQ(*first, *spaced);
  EXPECT_NE(*first, *other);
  EXPECT_FALSE(cache.Get({.json_schema = "{\"type\": 1}"}).ok());
}

}  // namespace
}  // namespace arbor::grammar
