// A string schema's keywords (`minLength`, `maxLength`) compiled to the automaton its characters
// follow (string_automaton.h). Lengths count Unicode code points, as JSON Schema specifies.
#ifndef ARBOR_GRAMMAR_STRING_KEYWORDS_H_
#define ARBOR_GRAMMAR_STRING_KEYWORDS_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "grammar/string_automaton.h"
#include "nlohmann/json.hpp"

namespace arbor::grammar {

// Nothing when `schema` has none of the keywords (any string); else their automaton, or
// INVALID_ARGUMENT at `pointer` (or the keyword's own) naming what is wrong.
absl::StatusOr<std::optional<StringAutomaton>> CompileStringKeywords(
    const nlohmann::ordered_json& schema, const std::string& pointer);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_STRING_KEYWORDS_H_
