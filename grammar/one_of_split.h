// `oneOf` made exact by JSON type. A document generated from one alternative must fail all the
// others, yet an alternative accepts more than it generates ({"minimum": 2} accepts every
// string). So each of the six JSON types is generated from the one alternative that may accept
// values of it, when every other alternative provably accepts none (by its `type`, `enum`,
// `const` or `not`, through references, `allOf`, `anyOf` and `oneOf`), restricted to that type.
// Where several may accept a type, it is still generated where that is exact: values of
// alternatives that list their values (`enum`, `const`) that no other lists, and objects of an
// alternative that declares its keys when each other requires a key it never generates (the
// compiler generates declared and required properties only). Other types are not generated: a
// subset of the valid documents. Alternatives that are all objects tagged by a first property's
// constant (discriminated_union.h) are kept as they are, as a union that refuses overlaps.
#ifndef ARBOR_GRAMMAR_ONE_OF_SPLIT_H_
#define ARBOR_GRAMMAR_ONE_OF_SPLIT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arbor::grammar {

struct OneOfSplit {
  // (Index in the oneOf list, the schema to generate from it): each document any of them
  // generates matches the oneOf, so any may be dropped.
  std::vector<std::pair<size_t, nlohmann::ordered_json>> alternatives;
  // The tagged-object case: the alternatives as listed, whose first bytes must not overlap.
  bool tagged = false;
};

// The split of `list` (the oneOf at `at` of the document `root`); INVALID_ARGUMENT at `at` when
// no alternative is left to generate from.
absl::StatusOr<OneOfSplit> SplitOneOf(const nlohmann::ordered_json& list,
                                      const nlohmann::ordered_json& root, const std::string& at);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_ONE_OF_SPLIT_H_
