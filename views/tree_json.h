// The JSON form of a search tree (arbor::v1::Tree): a documented, versioned schema for tools,
// notebooks and archives (docs/TREE_FORMAT.md). Enum values are written by name, 64-bit sequence
// ids as decimal strings (JavaScript numbers cannot hold them), non-finite floats as null.
#ifndef ARBOR_VIEWS_TREE_JSON_H_
#define ARBOR_VIEWS_TREE_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "arbor/v1/generation.pb.h"

namespace arbor::views {

inline constexpr char kTreeJsonFormat[] = "arbor.tree";
inline constexpr int kTreeJsonVersion = 1;

// Pretty-printed with `indent` spaces per level (< 0: one line).
std::string TreeToJson(const v1::Tree& tree, int indent = 2);

// Parses what TreeToJson writes (any version-1 document: unknown keys are ignored, so later
// minor additions stay readable). INVALID_ARGUMENT naming the offending field on bad input.
absl::StatusOr<v1::Tree> TreeFromJson(const std::string& json);

}  // namespace arbor::views

#endif  // ARBOR_VIEWS_TREE_JSON_H_
