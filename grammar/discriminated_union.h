// Discriminated unions of objects: `anyOf`/`oneOf` alternatives that are all objects opening with
// the same required property, each holding its own constant string (OpenAI tool calls, one
// alternative per tool with "name" first; Pydantic's `Field(discriminator=...)`). Their first
// bytes are all `{`, so a union chosen by its first byte cannot tell them apart; instead they are
// matched as one kDiscriminated object until the tag's value is read, and from then on as the
// alternative that value names. The matcher still decides every byte from its top frame.
#ifndef ARBOR_GRAMMAR_DISCRIMINATED_UNION_H_
#define ARBOR_GRAMMAR_DISCRIMINATED_UNION_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "grammar/json_grammar.h"

namespace arbor::grammar {

// The kDiscriminated node over those of `alternatives` (union alternatives, references followed)
// that are objects tagged by the first such object's first property, each with a tag value of
// its own; `merged[i]` says whether alternative i is among them. Nothing when fewer than two
// are: the union stays as it is.
std::optional<Node> MergeTaggedObjects(const JsonGrammar& grammar,
                                       absl::Span<const int32_t> alternatives,
                                       std::vector<bool>& merged);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_DISCRIMINATED_UNION_H_
