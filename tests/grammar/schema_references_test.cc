// References by base URI (grammar/schema_references.h): each `$ref` becomes the pointer of the
// subschema it names, whatever the `$id`s between, and what compiles from it generates only
// documents Python's `jsonschema` accepts.
#include "grammar/schema_references.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>

#include "tests/grammar/grammar_test_util.h"

namespace arbor::grammar {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::ordered_json;

// The `$ref` at `pointer` of `schema` once references are resolved.
std::string ResolvedRef(const std::string& schema, const std::string& pointer) {
  absl::StatusOr<Json> resolved = ResolveReferences(Json::parse(schema));
  EXPECT_TRUE(resolved.ok()) << resolved.status();
  return resolved.ok() ? resolved->at(Json::json_pointer(pointer)).get<std::string>() : "";
}

TEST(SchemaReferences, ResolveAgainstTheNearestBaseUri) {
  // Nested $ids, each resolved against its parent's.
  EXPECT_EQ(ResolvedRef(R"({"$id": "http://x.example/root.json", "$ref": "folder/item.json",
      "$defs": {"a": {"$id": "folder/", "$defs": {"b": {"$id": "item.json"}}}}})",
                        "/$ref"),
            "#/$defs/a/$defs/b");
  // A pointer inside an embedded resource is relative to that resource.
  EXPECT_EQ(ResolvedRef(R"({"$ref": "urn:uuid:deadbeef-4321", "$defs": {"foo": {
      "$id": "urn:uuid:deadbeef-4321", "$defs": {"bar": {}}, "$ref": "#/$defs/bar"}}})",
                        "/$defs/foo/$ref"),
            "#/$defs/foo/$defs/bar");
  // A URN base, with a pointer and with an anchor.
  const std::string urn = R"({"$id": "urn:uuid:feed", "properties": {
      "p": {"$ref": "urn:uuid:feed#/$defs/bar"}, "q": {"$ref": "urn:uuid:feed#thing"},
      "r": {"$ref": "#"}}, "$defs": {"bar": {"$anchor": "thing", "type": "string"}}})";
  EXPECT_EQ(ResolvedRef(urn, "/properties/p/$ref"), "#/$defs/bar");
  EXPECT_EQ(ResolvedRef(urn, "/properties/q/$ref"), "#/$defs/bar");
  EXPECT_EQ(ResolvedRef(urn, "/properties/r/$ref"), "#");
  // The same anchor in two resources; an absolute path against the root's authority.
  EXPECT_EQ(ResolvedRef(R"({"$id": "http://x.example/a/root", "$ref": "child1#my_anchor",
      "$defs": {"A": {"$id": "child1", "allOf": [{"$id": "child2", "$anchor": "my_anchor"},
                                                {"$anchor": "my_anchor", "type": "string"}]}}})",
                        "/$ref"),
            "#/$defs/A/allOf/1");
  EXPECT_EQ(ResolvedRef(R"({"$id": "http://x.example/ref/absref.json", "$ref": "/absref/f.json",
      "$defs": {"a": {"$id": "http://x.example/ref/absref/f.json"},
                "b": {"$id": "http://x.example/absref/f.json"}}})",
                        "/$ref"),
            "#/$defs/b");
  // Percent-escapes in a pointer are decoded, and '%' is escaped again for the compiler.
  EXPECT_EQ(ResolvedRef(R"({"$defs": {"a%b": {}}, "$ref": "#/$defs/a%25b"})", "/$ref"),
            "#/$defs/a%25b");
}

TEST(SchemaReferences, CompiledReferencesGenerateValidDocuments) {
  for (const char* schema : {
           R"({"$id": "http://x.example/tree", "type": "object", "required": ["meta"],
               "properties": {"meta": {"type": "string"}, "nodes": {"type": "array",
                   "maxItems": 2, "items": {"$ref": "node"}}},
               "$defs": {"node": {"$id": "http://x.example/node", "type": "object",
                   "required": ["value"], "properties": {"value": {"type": "number"},
                   "subtree": {"$ref": "tree"}}}}})",
           R"({"$id": "urn:uuid:feed", "minimum": 30, "type": "object",
               "properties": {"foo": {"$ref": "urn:uuid:feed"}}})",
           R"({"$id": "http://x.example/r", "$ref": "nested.json#foo", "$defs": {"A": {
               "$id": "nested.json", "$defs": {"B": {"$anchor": "foo", "type": "integer"}}}}})",
           R"({"$id": "https://x.example/root", "type": "array",
               "items": {"$dynamicRef": "#items"},
               "$defs": {"foo": {"$dynamicAnchor": "items", "type": "string"}}})",
           R"({"$id": "https://x.example/root", "$ref": "list", "$defs": {
               "foo": {"$dynamicAnchor": "items", "type": "string"},
               "list": {"$id": "list", "type": "array", "items": {"$dynamicRef": "#items"},
                        "$defs": {"items": {"$dynamicAnchor": "items"}}}}})"}) {
    ExpectWalksValidate(schema, 30);
  }
}

// Random documents of nested resources (tests/grammar/reference_oracle.py) whose root requires
// a property per target, each target a distinct const: `jsonschema` rejects any document where a
// reference was resolved to another target.
TEST(SchemaReferences, ResolveRandomDocumentsAsJsonschemaDoes) {
  const nlohmann::json answer = testing::RunPythonReference(
      "tests/grammar/reference_oracle.py", {{"seed", TestSeed()}, {"count", 60}});
  ASSERT_TRUE(answer.is_object());
  std::mt19937_64 rng(TestSeed());
  nlohmann::json items = nlohmann::json::array();
  for (const std::string schema : answer["schemas"]) {
    absl::StatusOr<JsonGrammar> grammar = CompileJsonSchema(schema);
    ASSERT_TRUE(grammar.ok()) << schema << ": " << grammar.status();
    for (int walk = 0; walk < 3; ++walk) {
      std::optional<std::string> document = RandomDocument(*grammar, rng);
      ASSERT_TRUE(document.has_value()) << schema;
      items.push_back({{"schema", schema}, {"document", *document}});
    }
  }
  ExpectAllValid(items);
}

TEST(SchemaReferences, RefusesWhatIsNotInTheDocumentOrNotExact) {
  EXPECT_THAT(CompileError(R"({"properties": {"x": {"$ref": "http://localhost:1234/int.json"}}})"),
              HasSubstr("at /properties/x/$ref: $ref 'http://localhost:1234/int.json' names "
                        "'http://localhost:1234/int.json', which is not in this schema: Arbor "
                        "does not fetch schemas; bundle the schema it names under $defs, with "
                        "its $id"));
  // An $id inside a value is data, not an identifier.
  EXPECT_THAT(CompileError(R"({"$ref": "http://x.example/e", "$defs": {"e": {"enum": [
      {"$id": "http://x.example/e", "type": "null"}]}}})"),
              HasSubstr("Arbor does not fetch schemas"));
  EXPECT_THAT(CompileError(R"({"$ref": "#/$defs/missing", "$defs": {}})"),
              HasSubstr("at /$ref: $ref '#/$defs/missing' names nothing in the schema"));
  EXPECT_THAT(CompileError(R"({"$ref": "#a", "$defs": {"x": {"$anchor": "a"},
                                                      "y": {"$anchor": "a"}}})"),
              HasSubstr("the anchor 'a' is defined twice"));
  // Which `items` anchor the reference names depends on the path taken to it.
  EXPECT_THAT(CompileError(R"({"$id": "https://x.example/main", "$defs": {
      "bar": {"$id": "bar", "type": "array", "items": {"$ref": "item"},
              "$defs": {"item": {"$id": "item", "type": "object", "properties": {
                            "content": {"$dynamicRef": "#content"}},
                            "$defs": {"d": {"$dynamicAnchor": "content", "type": "integer"}}},
                        "content": {"$dynamicAnchor": "content", "type": "string"}}}},
      "properties": {"bar-item": {"$ref": "bar#/$defs/item"}}})"),
              HasSubstr("keyword '$dynamicRef' is not supported where the schema it names "
                        "depends on the dynamic scope"));
}

}  // namespace
}  // namespace arbor::grammar
