// A JSON Schema compiled to the graph of nodes the constrained decoder walks (json_matcher.h).
//
// The subset is what structured-output APIs serve (OpenAI's strict mode, XGrammar, llguidance,
// llama.cpp's json-schema-to-grammar), and more:
//  - `type` (one or a list; without it, the types the schema's keywords restrict), `enum`,
//    `const` (the values the other keywords beside them also take), `$ref` to any subschema of
//    the document by JSON pointer, `$id`-relative URI or anchor, and `$dynamicRef` where the
//    schema it names is the same whatever the path taken (schema_references.h; recursion
//    allowed; nothing is fetched);
//  - objects: `properties`, `required`, `additionalProperties` (a boolean, or a schema: the
//    values of a map, an object without `properties`), `unevaluatedProperties` (only declared
//    properties are generated), a property whose schema accepts nothing (never generated);
//  - arrays: `prefixItems`, `items` (a schema or false), `minItems`, `maxItems`,
//    `unevaluatedItems` (no item past `prefixItems` without `items`);
//  - numbers: `minimum`, `maximum`, the exclusive ones (the value of the double each parses to,
//    as validators compare, fractional ranges holding no integer included), integer
//    `multipleOf` (number_bounds.h);
//  - strings: `minLength`, `maxLength` in code points, `pattern` (a subset of ECMA-262,
//    regex_parser.h), `format` (date, time, date-time, duration, email, hostname, ipv4, ipv6,
//    uri, uuid: string_format.h), all holding at once (string_keywords.h);
//  - `anyOf` (of alternatives that start alike, the first is kept), `oneOf` (each JSON type from
//    the one alternative that may accept it, one_of_split.h), objects told apart by a first
//    required property holding a distinct constant string (discriminated_union.h);
//  - `allOf`, `if`/`then`/`else` and keywords beside `$ref`/`anyOf`/`oneOf`, merged where the
//    merge is exact (schema_merge.h); `not` of a schema whose `type`, `enum` or `const` leaves
//    out some types: those types;
//  - annotations (`title`, `description`, `default`, `examples`, the content vocabulary, …).
// A keyword outside it that restricts one type only (`contains`, `patternProperties`, a
// `pattern` outside the regular expression subset, an unknown `format`, …) is honoured by
// generating the schema's other types when it allows any (schema_keywords.h); anything else is
// refused by name with the JSON pointer of the schema that holds it, rather than ignored:
// ignoring `pattern` would yield JSON that fails the user's schema.
//
// What the compiled grammar generates is a subset of what the schema accepts, chosen so that a
// matcher decides every byte deterministically: declared properties in their declared order
// (optional ones may be skipped, no undeclared ones), enum and const values in compact form (a
// number beyond what a double holds exactly as written in the schema, exact_json.h),
// numbers with at most 15 integer and 15 fraction digits, and whitespace between tokens that is
// nothing, one space, or a newline and an indent of at most 20 (json_matcher.h). Every document
// it generates validates against the schema.
#ifndef ARBOR_GRAMMAR_JSON_GRAMMAR_H_
#define ARBOR_GRAMMAR_JSON_GRAMMAR_H_

#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grammar/number_bounds.h"
#include "grammar/string_automaton.h"
#include "grammar/string_trie.h"

namespace arbor::grammar {

enum class NodeKind : uint8_t {
  kObject,    // `{…}`: declared properties, or any keys when free_form.
  kArray,     // `[…]` of `items`.
  kString,    // Any JSON string.
  kNumber,    // A JSON number.
  kInteger,   // Digits with an optional minus sign.
  kLiterals,  // One of `literals` (compact JSON texts): enum, const, true/false, null.
  kUnion,     // One of `alternatives`, chosen by the first byte.
  // An object whose first property's value (one of `literals`, strings) picks which of the
  // `alternatives` (kObject nodes whose first property it is) the rest of it follows
  // (discriminated_union.h).
  kDiscriminated,
};

struct Property {
  std::string key;  // The key as JSON text, quotes included: "\"name\"".
  int32_t value = -1;
  bool required = false;
};

struct Node {
  NodeKind kind = NodeKind::kString;
  std::vector<Property> properties = {};  // kObject, in declared order.
  bool free_form = false;                 // kObject: any string keys, values of `items`.
  int32_t items = -1;                     // kArray's items; a free-form kObject's values (-1: any).
  std::vector<int32_t> prefix = {};       // kArray: the first items' own nodes (prefixItems).
  int32_t min_items = 0;                  // kArray.
  int32_t max_items = -1;                 // kArray; -1: unbounded.
  NumberBounds bounds = {};               // kNumber, kInteger.
  int32_t text = -1;  // kString: its automaton in JsonGrammar::texts (-1: any string).
  std::vector<std::string> literals = {};  // kLiterals; kDiscriminated's tag values.
  int32_t filter = -1;  // kLiterals: the node of the schema's other keywords (-1: none).
  std::vector<int32_t> alternatives = {};  // kUnion: first bytes are disjoint.
  // The index the matcher walks, whatever the number of properties or literals: kObject's keys
  // by property index, kLiterals' literals by literal index.
  StringTrie names = {};
  StringTrie tags = {};  // kDiscriminated's `literals`.
  // kObject: for each i in [0, properties.size()], the first required property at or after i
  // (properties.size() when none), so property i may follow property next - 1 exactly when
  // next <= i <= required_from[next].
  std::vector<int32_t> required_from = {};
};

struct JsonGrammar {
  std::vector<Node> nodes;
  int32_t root = 0;
  int32_t any_value = -1;   // The node of "any JSON value" (free-form objects' values).
  int32_t any_string = -1;  // The node of a string (free-form objects' keys).
  std::vector<std::bitset<256>> first_bytes;  // Per node: the bytes its values start with.
  std::vector<StringAutomaton> texts;          // Constrained strings' automata.
};

// Limits that hold while compiling, whatever the schema's size.
inline constexpr int kMaxSchemaBytes = 256 * 1024;
inline constexpr int kMaxSchemaDepth = 128;  // JSON nesting levels of the schema text.
inline constexpr int kMaxGrammarNodes = 20000;

// Compiles the schema text. INVALID_ARGUMENT naming the keyword and where it is ("at
// /properties/tags: keyword 'uniqueItems' is not supported …") for anything outside the subset,
// a malformed or oversized schema, or one nothing finite can satisfy (a property required all the
// way down, through $ref, so every instance would be infinite: named by the pointer of that
// property).
absl::StatusOr<JsonGrammar> CompileJsonSchema(absl::string_view schema_text);

// Any JSON object (OpenAI's response_format {"type": "json_object"}).
JsonGrammar AnyJsonObjectGrammar();

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_JSON_GRAMMAR_H_
