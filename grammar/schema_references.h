// References by base URI (JSON Schema 2020-12 §8.2): every `$ref` of a schema document resolved
// to the subschema it names and rewritten as the root-relative JSON pointer ("#/$defs/a") that
// the compiler (json_grammar.h) and the merge (schema_merge.h) follow. A subschema's base URI is
// its `$id` resolved against its parent's (the root's, without `$id`, a fixed URI of its own);
// each `$id` makes an embedded resource, and `$anchor` and `$dynamicAnchor` name subschemas within
// theirs. A `$ref` is resolved against its own schema's base (RFC 3986, uri_reference.h): the
// resource, a JSON pointer within it, or an anchor of it. Nothing is fetched: a reference outside
// the document is refused, saying to bundle the schema under `$defs` with its `$id`.
//
// `$dynamicRef` is rewritten as a `$ref` where that is exact: its fragment is a JSON pointer, the
// schema it first resolves to has no `$dynamicAnchor` of the fragment's name, or the document has
// one `$dynamicAnchor` of that name only (so every dynamic scope ends there). Otherwise which
// schema it names depends on the path evaluation took, and it is refused.
#ifndef ARBOR_GRAMMAR_SCHEMA_REFERENCES_H_
#define ARBOR_GRAMMAR_SCHEMA_REFERENCES_H_

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arbor::grammar {

// The base URI of a root schema without `$id`.
inline constexpr char kRootBaseUri[] = "https://schema.arbor.invalid/root.json";

// A copy of `root` whose every `$ref` in a subschema is "#<pointer>" ('%' escaped as "%25"), and
// whose exact `$dynamicRef`s are `$ref`s (appended to `allOf` beside a `$ref` of its own).
// INVALID_ARGUMENT naming the keyword and its pointer for a reference to nothing in the document,
// an ambiguous one (an anchor or `$id` defined twice) or an inexact `$dynamicRef`.
absl::StatusOr<nlohmann::ordered_json> ResolveReferences(const nlohmann::ordered_json& root);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_SCHEMA_REFERENCES_H_
