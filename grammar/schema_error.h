// The compile errors of a JSON Schema: INVALID_ARGUMENT saying where in the schema (a JSON
// pointer) and what, so a client sees which keyword of which subschema to change.
#ifndef ARBOR_GRAMMAR_SCHEMA_ERROR_H_
#define ARBOR_GRAMMAR_SCHEMA_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace arbor::grammar {

// "at /properties/name: `what`" ("at the schema's root: …" for the empty pointer).
absl::Status SchemaError(absl::string_view pointer, absl::string_view what);

// The pointer of `key` inside the schema at `pointer` ("~" and "/" escaped).
std::string ChildPointer(absl::string_view pointer, absl::string_view key);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_SCHEMA_ERROR_H_
