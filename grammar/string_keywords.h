// A string schema's keywords (`minLength`, `maxLength`, `pattern`, `format`) compiled to the
// automaton its characters follow (string_automaton.h): the pattern's DFA (regex_dfa.h) and the
// format's (string_format.h) intersected, crossed with the length count. Lengths count Unicode
// code points, as JSON Schema specifies.
#ifndef ARBOR_GRAMMAR_STRING_KEYWORDS_H_
#define ARBOR_GRAMMAR_STRING_KEYWORDS_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grammar/string_automaton.h"
#include "nlohmann/json.hpp"

namespace arbor::grammar {

// Whether `schema`'s `key` ("pattern" or "format") can be enforced: OK, or INVALID_ARGUMENT
// naming the keyword and why not (a pattern outside regex_parser.h's subset or past its limits, a
// format string_format.h does not know), without a pointer.
absl::Status CheckStringKeyword(const nlohmann::ordered_json& schema, absl::string_view key);

// Nothing when `schema` has none of the keywords (any string); else their automaton, or
// INVALID_ARGUMENT at `pointer` (or the keyword's own) naming what is wrong. A `format` that
// CheckStringKeyword refuses is left out: schema_keywords.h generates no strings then.
absl::StatusOr<std::optional<StringAutomaton>> CompileStringKeywords(
    const nlohmann::ordered_json& schema, const std::string& pointer);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_STRING_KEYWORDS_H_
