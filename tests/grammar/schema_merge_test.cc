// allOf, if/then and keywords beside $ref/anyOf/oneOf, merged (schema_merge.h): the merged
// grammar's documents validate against the original schema, and what cannot merge is refused.
#include "grammar/schema_merge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/grammar/grammar_test_util.h"

namespace arbor::grammar {
namespace {

using ::testing::HasSubstr;

TEST(SchemaMerge, MergedSchemasGenerateOnlyValidDocuments) {
  const std::string person = R"({"$defs": {"named": {"type": "object", "required": ["name"],
      "properties": {"name": {"type": "string", "minLength": 1}}}},
    "allOf": [{"$ref": "#/$defs/named"},
              {"properties": {"name": {"maxLength": 3}, "age": {"type": "integer",
                                                            "minimum": 0}},
               "required": ["age"]},
              {"properties": {"age": {"maximum": 150}}}]})";
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(person);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, R"({"name":"Ann","age":31})"));
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"Anne","age":31})"));  // maxLength of a later part.
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"Ann","age":151})"));
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"Ann"})"));
  ExpectWalksValidate(person);
  for (const char* schema :
       {R"({"type": "string", "anyOf": [{"maxLength": 2}, {"minLength": 4}]})",
        R"({"if": {"type": "integer"}, "then": {"minimum": 3}, "else": {"type": "string"}})",
        R"({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n", "maximum": -2})",
        R"({"type": ["integer", "string"], "allOf": [{"type": "number"}]})",
        // items applies past its own part's prefixItems only.
        R"({"allOf": [{"prefixItems": [{"minimum": 3}]}], "items": {"minimum": 5}})",
        R"({"prefixItems": [{"type": "string"}], "allOf": [{"prefixItems": [true, {"type":
            "number"}]}], "unevaluatedItems": false})",
        R"({"allOf": [{"prefixItems": [{"type": "string"}], "unevaluatedItems": false}],
            "maxItems": 4})",
        R"({"properties": {"foo": {"type": "string"}}, "unevaluatedProperties": false,
            "anyOf": [{"properties": {"bar": {"const": "bar"}}, "required": ["bar"]}]})",
        R"({"allOf": [{"properties": {"foo": true}, "unevaluatedProperties": false}],
            "anyOf": [{"properties": {"foo": {"type": "integer"}}}]})",
        R"({"if": false, "then": {"const": "then"}, "else": {"const": "else"}})",
        // Another part's additionalProperties applies to a property beyond its own.
        R"({"allOf": [{"properties": {"foo": {"type": "number"}}},
                      {"additionalProperties": {"type": "integer"}}]})",
        R"({"allOf": [{"properties": {"foo": true}}],
            "anyOf": [{"properties": {"bar": true}, "unevaluatedProperties": false}]})",
        R"({"allOf": [{"multipleOf": 2}, {"multipleOf": 3}], "maximum": 100})"}) {
    ExpectWalksValidate(schema, 30);
  }
}

TEST(SchemaMerge, WhatDoesNotMergeIsRefusedByName) {
  EXPECT_THAT(CompileError(R"({"allOf": [{"type": "string"}, {"type": "integer"}]})"),
              HasSubstr("allOf: the parts' types do not meet"));
  EXPECT_THAT(CompileError(R"({"allOf": [{"const": 1}, {"const": 2}]})"),
              HasSubstr("allOf: the parts disagree on keyword 'const'"));
  EXPECT_THAT(
      CompileError(R"({"allOf": [{"properties": {"a": {}}, "additionalProperties": false},
                                 {"properties": {"b": {}}, "required": ["b"]}]})"),
      HasSubstr("additionalProperties of one part refuses the property 'b' another requires"));
  EXPECT_THAT(CompileError(R"({"allOf": [true, false]})"), HasSubstr("a part is false"));
  // References that fan out, each part merging six more, fourteen deep: refused at once.
  nlohmann::json fan = {{"$ref", "#/$defs/a0"}};
  for (int i = 0; i < 14; ++i) {
    nlohmann::json& level = fan["$defs"][absl::StrCat("a", i)];
    level = {{"allOf", nlohmann::json::array()}, {"minimum", i}};
    for (int k = 0; k < 6; ++k) {
      level["allOf"].push_back({{"$ref", absl::StrCat("#/$defs/a", i + 1)}});
    }
  }
  fan["$defs"]["a14"] = {{"type", "integer"}};
  EXPECT_THAT(CompileError(fan.dump()), HasSubstr("fan out into more than 1000 merges"));
  // A part's unevaluatedProperties does not see the properties beside it.
  EXPECT_THAT(CompileError(R"({"allOf": [{"properties": {"foo": {}},
                                          "unevaluatedProperties": false}],
                               "properties": {"bar": {}}, "required": ["bar"]})"),
              HasSubstr("unevaluatedProperties of one part refuses the property 'bar' another "
                        "requires"));
  // Keywords beside a oneOf go into each alternative: here both then accept every short string.
  EXPECT_THAT(CompileError(R"({"type": "string", "maxLength": 3,
                               "oneOf": [{"type": "string"}, {"minLength": 0}]})"),
              HasSubstr("oneOf: no value is known to match one alternative only"));
}

TEST(SchemaMerge, LocalReferencesByPointerEscapeAndAnchor) {
  absl::StatusOr<JsonGrammar> anchored = CompileJsonSchema(
      R"({"$defs": {"a": {"$anchor": "num", "type": "integer"}}, "$ref": "#num"})");
  ASSERT_TRUE(anchored.ok()) << anchored.status();
  EXPECT_TRUE(Accepts(*anchored, "12"));
  EXPECT_FALSE(Accepts(*anchored, R"("x")"));
  absl::StatusOr<JsonGrammar> escaped = CompileJsonSchema(
      R"({"$defs": {"a%b": {"type": "null"}}, "properties": {"x": {"$ref": "#/$defs/a%25b"}}})");
  ASSERT_TRUE(escaped.ok()) << escaped.status();
  EXPECT_TRUE(Accepts(*escaped, R"({"x":null})"));
  EXPECT_FALSE(Accepts(*escaped, R"({"x":1})"));
  // An anchor of an embedded resource (its own $id) is not this schema's.
  EXPECT_THAT(CompileError(R"({"$defs": {"r": {"$id": "http://x.example/r",
                                              "$defs": {"b": {"$anchor": "b"}}}},
                               "$ref": "#b"})"),
              HasSubstr("at /$ref: $ref '#b': no $anchor 'b' in the schema resource"));
}

}  // namespace
}  // namespace arbor::grammar
