// `allOf`, `if`/`then`, and keywords beside `$ref`, `anyOf` or `oneOf`, merged into one schema the
// compiler (json_grammar.h) takes as usual. Merging is exact or refused: properties are united
// (a property in several parts gets all their schemas; one beyond another part's properties gets
// that part's `additionalProperties` too, so under false it is never generated), `required`
// united, `type` and `enum` intersected, numeric and length bounds tightened, integer
// `multipleOf`s to their least common multiple, `prefixItems` and `items` merged position by
// position; parts that disagree otherwise are refused naming the keyword. A part's
// `unevaluatedItems` or `unevaluatedProperties` sees only what that part evaluates: it becomes a
// `maxItems`, or a bound on the merged properties. `if`/`then`/`else` generates instances of `if`
// and `then` (they satisfy the conditional whatever `else` says), or of `else` when `if` is false.
// Keywords beside `anyOf`/`oneOf` go into each alternative (the unevaluated ones stay beside
// them), and a reference is replaced by the schema it names (one level: references inside it
// stay references, so recursion still works).
#ifndef ARBOR_GRAMMAR_SCHEMA_MERGE_H_
#define ARBOR_GRAMMAR_SCHEMA_MERGE_H_

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arbor::grammar {

// The schema a local reference names within `root`: "#" itself or a JSON pointer ("#/$defs/a",
// percent-escapes decoded as in a URI fragment), the form schema_references.h rewrites every
// reference to. Null when it names nothing, or is not of that form.
const nlohmann::ordered_json* FindLocalRef(const nlohmann::ordered_json& root,
                                           const std::string& ref);

// Whether `schema` has something to merge.
bool NeedsMerge(const nlohmann::ordered_json& schema);

// The merged form of `schema` (of the document `root`, for references); INVALID_ARGUMENT at
// `pointer` naming what does not merge, or past 1,000 merges of merges.
absl::StatusOr<nlohmann::ordered_json> MergeSchema(const nlohmann::ordered_json& schema,
                                                   const nlohmann::ordered_json& root,
                                                   const std::string& pointer);

// The schema a chain of lone local references (a `$ref` with annotations only) from `schema` ends
// at: `schema` itself when it is not one. Null when a reference names nothing, or after 8.
const nlohmann::ordered_json* FollowRefs(const nlohmann::ordered_json& schema,
                                         const nlohmann::ordered_json& root);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_SCHEMA_MERGE_H_
