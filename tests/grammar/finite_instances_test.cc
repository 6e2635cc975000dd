// Schemas with no finite instance are refused when compiled, naming the JSON pointer of the
// property (or items) whose requirement closes the cycle; recursion with a way out compiles.
#include "grammar/finite_instances.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "grammar/json_grammar.h"

namespace arbor::grammar {
namespace {

using ::testing::HasSubstr;

std::string CompileError(const std::string& schema) {
  absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
  return grammar.ok() ? "" : std::string(grammar.status().message());
}

TEST(FiniteInstances, ARequiredCycleIsRefusedNamingWhereItCloses) {
  EXPECT_THAT(
      CompileError(R"({"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}},)"
                   R"("required":["next"]}},"$ref":"#/$defs/n"})"),
      HasSubstr("at /$defs/n/properties/next: required property 'next' has no finite value"));
  EXPECT_THAT(CompileError(R"({"type":"object","properties":{"self":{"$ref":"#"}},)"
                           R"("required":["self"]})"),
              HasSubstr("at /properties/self: required property 'self'"));
  // Two definitions requiring each other, reached through an optional property.
  EXPECT_THAT(
      CompileError(R"({"properties":{"x":{"$ref":"#/$defs/a"}},"$defs":{)"
                   R"("a":{"properties":{"b":{"$ref":"#/$defs/b"}},"required":["b"]},)"
                   R"("b":{"properties":{"a":{"$ref":"#/$defs/a"}},"required":["a"]}},)"
                   R"("required":["x"]})"),
      HasSubstr("/properties/"));
  EXPECT_THAT(CompileError(R"({"$defs":{"l":{"type":"array","minItems":1,)"
                           R"("items":{"$ref":"#/$defs/l"}}},"$ref":"#/$defs/l"})"),
              HasSubstr("at /$defs/l/items: minItems requires an item"));
}

TEST(FiniteInstances, RecursionWithAWayOutCompiles) {
  for (const char* schema : {
           R"({"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},)"
           R"("$ref":"#/$defs/n"})",
           R"({"$defs":{"n":{"type":"object","properties":{"next":{"anyOf":[)"
           R"({"$ref":"#/$defs/n"},{"type":"null"}]}},"required":["next"]}},"$ref":"#/$defs/n"})",
           R"({"$defs":{"l":{"type":"array","items":{"$ref":"#/$defs/l"}}},"$ref":"#/$defs/l"})",
       }) {
    EXPECT_EQ(CompileError(schema), "") << schema;
  }
}

}  // namespace
}  // namespace arbor::grammar
