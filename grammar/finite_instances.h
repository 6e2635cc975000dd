// Whether a compiled schema has any finite instance. A property that is required all the way
// down (an object whose required property's schema is, through $ref, the object again; an array
// whose minItems demands an item of its own kind) leaves nothing a generator could finish: the
// decoder would run until its length limit. Such schemas are refused when compiled.
#ifndef ARBOR_GRAMMAR_FINITE_INSTANCES_H_
#define ARBOR_GRAMMAR_FINITE_INSTANCES_H_

#include <cstdint>
#include <optional>

#include "grammar/json_grammar.h"

namespace arbor::grammar {

// An edge on a cycle every instance of the root must follow: property `property` of object
// `node`, or (property -1) the items of array `node`.
struct InfiniteEdge {
  int32_t node = -1;
  int32_t property = -1;
};

// Nothing when the root has a finite instance; else an edge of a cycle that forbids one. Linear
// in the grammar's size (a propagation from the nodes that are finite by themselves).
std::optional<InfiniteEdge> FindInfiniteCycle(const JsonGrammar& grammar);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_FINITE_INSTANCES_H_
