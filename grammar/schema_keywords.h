// Which JSON Schema keywords the compiler (json_grammar.h) knows, and which JSON types a schema's
// instances are generated as. A keyword it cannot honour but that restricts one type only
// (`contains` arrays, `patternProperties` objects, a `pattern` outside the regular expression
// subset or an unknown `format` for strings, …) is honoured by not generating that type, where
// the schema allows others: {"contains": …} accepts every non-array,
// so generating only non-arrays keeps every document valid. Otherwise it is refused by name.
#ifndef ARBOR_GRAMMAR_SCHEMA_KEYWORDS_H_
#define ARBOR_GRAMMAR_SCHEMA_KEYWORDS_H_

#include <bitset>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace arbor::grammar {

// Keywords that never restrict instances (title, description, $defs, the content vocabulary,
// which draft 2020-12 makes annotation only, …).
bool IsAnnotation(absl::string_view key);
// Whether the compiler handles `key`.
bool IsCompiledKeyword(absl::string_view key);

// How many JSON types there are to generate: object, array, string, number, boolean, null.
inline constexpr size_t kJsonTypes = 6;
// Their names ("number" stands for integers too).
inline constexpr const char* kJsonTypeNames[kJsonTypes] = {"object",  "array",   "string",
                                                           "number",  "boolean", "null"};

// The JSON types `schema`'s instances are generated as ("integer" or "number" for numbers, never
// both): `type` when given, else the types its compiled keywords restrict (a subset of what it
// accepts, all valid), else all six; less the types an unsupported keyword restricts.
// INVALID_ARGUMENT at `pointer` for a malformed `type`, or naming the unsupported keyword when
// nothing is left (or it restricts every type).
absl::StatusOr<std::vector<std::string>> InstanceTypes(const nlohmann::ordered_json& schema,
                                                       const std::string& pointer);

// Which of kJsonTypeNames `schema`'s own `type`, `enum`, `const` and `not` let through, so that
// every value it accepts is of one of them (its other keywords, references and subschemas are the
// caller's to weigh): all six for true, none for false or a `not` of everything.
std::bitset<kJsonTypes> TypesLetThrough(const nlohmann::ordered_json& schema);

// Whether `value` is of the JSON type `type` ("integer" values are numbers too).
bool HasType(const nlohmann::ordered_json& value, absl::string_view type);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_SCHEMA_KEYWORDS_H_
