// The format automata (string_format.h): random walks of every format, alone and with a pattern
// and lengths, all valid to `jsonschema` asserting formats (tests/grammar/json_schema_oracle.py),
// hand cases at their edges, and unknown formats left to the schema's other types.
#include "grammar/string_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar/token_masker.h"
#include "grammar/token_trie.h"
#include "nlohmann/json.hpp"
#include "tests/grammar/grammar_test_util.h"
#include "tests/grammar/mask_walk.h"
#include "tests/support/python_reference.h"
#include "tests/support/test_seed.h"

namespace arbor::grammar {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> FormatSchemas() {
  std::vector<std::string> schemas;
  for (const std::string& name : FormatNames()) {
    schemas.push_back(nlohmann::json({{"type", "string"}, {"format", name}}).dump());
  }
  schemas.push_back(R"({"format": "email", "pattern": "^[a-z]", "maxLength": 30})");
  schemas.push_back(R"({"type": "string", "format": "date", "pattern": "^20[0-9]{2}-0"})");
  schemas.push_back(R"({"type": ["string", "null"], "format": "uuid"})");
  schemas.push_back(R"({"type": "string", "format": "ipv6", "minLength": 20})");
  return schemas;
}

TEST(StringFormat, WalksOfEveryFormatValidate) {
  std::mt19937_64 rng(TestSeed());
  nlohmann::json items = nlohmann::json::array();
  for (const std::string& schema : FormatSchemas()) {
    absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
    ASSERT_TRUE(grammar.ok()) << schema << ": " << grammar.status();
    for (int w = 0; w < 60; ++w) {
      std::optional<std::string> document =
          RandomDocument(*grammar, rng, std::uniform_int_distribution<size_t>(0, 80)(rng));
      ASSERT_TRUE(document.has_value()) << schema;
      items.push_back({{"schema", schema}, {"document", *document}});
    }
  }
  ExpectAllValid(items);
}

// The masker keys a constrained string's frame by the states no token tells apart: along random
// token walks its masks equal testing every token, with tokens long enough to reach a bound.
TEST(StringFormat, MasksOfConstrainedStringsEqualTheTokenByTokenReference) {
  std::vector<std::string> tokens;
  for (char c = ' '; c < 127; ++c) tokens.push_back(std::string(1, c));
  for (const char* t :
       {"abc", "aaaa", "@ex", ".com", ".com\"", "2024-", "-02-", "28\"", "\xC3\xA9", "\xC3", "\xA9",
        "\xE6\x97\xA5\xE6\x9C\xAC", "\\n", "\"}", "bbbbbbbbbbbbbbbbbbbb", "          "}) {
    tokens.push_back(t);
  }
  const TokenTrie trie(tokens);
  std::mt19937_64 rng(TestSeed());
  for (const char* schema :
       {R"({"type": "string", "pattern": "^[a-z]{1,8}@[a-z]{2,5}\\.com$"})",
        R"({"type": "string", "minLength": 3, "maxLength": 30})",
        R"({"type": "string", "pattern": "ab{2,24}c"})", R"({"format": "date"})",
        R"({"type": "array", "items": {"format": "email", "maxLength": 24}})"}) {
    absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
    ASSERT_TRUE(grammar.ok()) << grammar.status();
    TokenMasker masker(&*grammar, &trie, trie.vocab_size());
    for (int walk = 0; walk < 20; ++walk) {
      CheckMaskWalk(*grammar, trie, masker, schema, 60, rng);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(StringFormat, EdgesOfEachFormat) {
  struct Case {
    const char* format;
    const char* value;
    bool generated;
  };
  const Case kCases[] = {{"date", "2024-02-28", true},
                         {"date", "2024-02-29", false},
                         {"date", "2023-04-31", false},
                         {"date", "0000-01-01", false},
                         {"date", "0001-12-31", true},
                         {"time", "23:59:59.123Z", true},
                         {"time", "24:00:00Z", false},
                         {"time", "12:00:00", false},
                         {"time", "12:00:00+14:00", true},
                         {"date-time", "2020-01-01T00:00:00-05:30", true},
                         {"date-time", "2020-01-01 00:00:00Z", false},
                         {"email", "first.last+tag@example.com", true},
                         {"email", "a..b@example.com", false},
                         {"email", "a@b@c", false},
                         {"hostname", "a-b.example", true},
                         {"hostname", "a--b.example", false},
                         {"hostname", "example.123", false},
                         {"ipv4", "192.168.0.255", true},
                         {"ipv4", "256.1.1.1", false},
                         {"ipv4", "01.1.1.1", false},
                         {"ipv6", "::", true},
                         {"ipv6", "1:2:3:4:5:6:7:8", true},
                         {"ipv6", "1::2::3", false},
                         {"ipv6", "1:2:3:4:5:6:7:8:9", false},
                         {"uri", "https://example.com:8080/a/b?c=d#e", true},
                         {"uri", "/relative", false},
                         {"uuid", "123e4567-e89b-12d3-a456-426614174000", true},
                         {"uuid", "123e4567e89b12d3a456426614174000", false},
                         {"duration", "P1Y2M3DT4H5M6S", true},
                         {"duration", "PT", false},
                         {"duration", "P1W", true},
                         {"duration", "P1H", false}};
  for (const Case& c : kCases) {
    const std::string schema = nlohmann::json({{"type", "string"}, {"format", c.format}}).dump();
    absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
    ASSERT_TRUE(grammar.ok()) << grammar.status();
    EXPECT_EQ(Accepts(*grammar, nlohmann::json(c.value).dump()), c.generated)
        << c.format << " " << c.value;
  }
}

TEST(StringFormat, UnknownFormatsLeaveTheOtherTypes) {
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(R"({"format": "color"})");
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, "12"));
  EXPECT_FALSE(Accepts(*grammar, R"("red")"));
  EXPECT_THAT(CompileError(R"({"type": "string", "format": "color"})"),
              HasSubstr("at /format: keyword 'format' is not supported for \"color\" (supported: "
                        "date, date-time, duration, email, hostname, ipv4, ipv6, time, uri, "
                        "uuid)"));
  for (const std::string& name : FormatNames()) EXPECT_NE(FindFormat(name), nullptr) << name;
}

}  // namespace
}  // namespace arbor::grammar
