// Discriminated unions of objects (discriminated_union.h): the tool-calling shape, Pydantic's
// through $ref, mixed with other types, and the unions that stay refused.
#include "grammar/discriminated_union.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/grammar/grammar_test_util.h"

namespace arbor::grammar {
namespace {

using ::testing::HasSubstr;

// One alternative per tool, as OpenAI tool calling compiles them.
constexpr char kTools[] = R"({"anyOf": [
  {"type": "object", "additionalProperties": false, "required": ["name", "arguments"],
   "properties": {"name": {"const": "get_weather"},
                  "arguments": {"type": "object", "additionalProperties": false,
                                "required": ["city"],
                                "properties": {"city": {"type": "string"},
                                               "unit": {"enum": ["c", "f"]}}}}},
  {"type": "object", "additionalProperties": false, "required": ["name", "arguments"],
   "properties": {"name": {"type": "string", "enum": ["get"]},
                  "arguments": {"type": "object", "additionalProperties": false,
                                "required": ["id"], "properties": {"id": {"type": "integer"}}}}},
  {"type": "object", "additionalProperties": false, "required": ["name", "arguments"],
   "properties": {"name": {"const": "search"},
                  "arguments": {"type": "object", "additionalProperties": false,
                                "properties": {}}}}]})";

TEST(DiscriminatedUnion, EachToolNameLeadsToItsOwnArguments) {
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(kTools);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, R"({"name":"get_weather","arguments":{"city":"Paris"}})"));
  EXPECT_TRUE(Accepts(*grammar, R"({"name": "get", "arguments": {"id": 3}})"));
  EXPECT_TRUE(Accepts(*grammar, "{\n  \"name\": \"search\",\n  \"arguments\": {}\n}"));
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"get","arguments":{"city":"Paris"}})"));
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"get_weather","arguments":{"id":3}})"));
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"search"})"));        // arguments is required.
  EXPECT_FALSE(Accepts(*grammar, R"({"name":"fetch","arguments":{}})"));  // No such tool.
  EXPECT_FALSE(Accepts(*grammar, R"({"arguments":{},"name":"search"})"));  // The tag comes first.
  EXPECT_FALSE(Accepts(*grammar, R"({})"));
  ExpectWalksValidate(kTools);
}

TEST(DiscriminatedUnion, PydanticUnionsThroughRefsAndBesideOtherTypes) {
  const std::string pets = R"({"$defs": {
    "Cat": {"title": "Cat", "type": "object", "required": ["pet_type", "meows"],
            "properties": {"pet_type": {"const": "cat", "title": "Pet Type", "type": "string"},
                           "meows": {"type": "integer"}}},
    "Dog": {"title": "Dog", "type": "object", "required": ["pet_type", "barks"],
            "properties": {"pet_type": {"const": "dog", "type": "string"},
                           "barks": {"type": "number"}, "friend": {"$ref": "#/$defs/Pet"}}},
    "Pet": {"oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}, {"type": "null"}]}},
    "type": "object", "required": ["pet"], "properties": {"pet": {"$ref": "#/$defs/Pet"}}})";
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(pets);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Accepts(*grammar, R"({"pet":{"pet_type":"cat","meows":2}})"));
  EXPECT_TRUE(Accepts(
      *grammar, R"({"pet":{"pet_type":"dog","barks":1.5,"friend":{"pet_type":"cat","meows":1}}})"));
  EXPECT_TRUE(Accepts(*grammar, R"({"pet":null})"));
  EXPECT_FALSE(Accepts(*grammar, R"({"pet":{"pet_type":"cat","barks":2}})"));
  EXPECT_FALSE(Accepts(*grammar, R"({"pet":{"pet_type":"dog","meows":2}})"));
  ExpectWalksValidate(pets);
}

TEST(DiscriminatedUnion, UnionsThatNoTagTellsApartStayRefused) {
  // The same tag value twice.
  EXPECT_THAT(CompileError(R"({"oneOf": [
      {"properties": {"k": {"const": "a"}, "x": {}}, "required": ["k"]},
      {"properties": {"k": {"const": "a"}, "y": {}}, "required": ["k"]}]})"),
              HasSubstr("at /oneOf: alternative 1 can start like an earlier one"));
  // The tag is optional, so an instance need not start with it.
  EXPECT_THAT(CompileError(R"({"oneOf": [
      {"properties": {"k": {"const": "a"}}, "required": ["k"]},
      {"properties": {"k": {"const": "b"}}}]})"),
              HasSubstr("alternative 1 can start like an earlier one"));
  // Different first properties.
  EXPECT_THAT(CompileError(R"({"oneOf": [
      {"properties": {"k": {"const": "a"}}, "required": ["k"]},
      {"properties": {"j": {"const": "b"}}, "required": ["j"]}]})"),
              HasSubstr("alternative 1 can start like an earlier one"));
  // A tag that is no string.
  EXPECT_THAT(CompileError(R"({"oneOf": [
      {"properties": {"k": {"const": 1}}, "required": ["k"]},
      {"properties": {"k": {"const": 2}}, "required": ["k"]}]})"),
              HasSubstr("alternative 1 can start like an earlier one"));
}

}  // namespace
}  // namespace arbor::grammar
