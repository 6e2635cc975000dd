// The string keywords of string_keywords.h.
#include "grammar/string_keywords.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grammar/dfa_algebra.h"
#include "grammar/regex_dfa.h"
#include "grammar/schema_error.h"
#include "grammar/string_format.h"

namespace arbor::grammar {
namespace {

using Json = nlohmann::ordered_json;

// A length keyword's value: a non-negative integer (a larger one than any string generated
// binds as that limit); -1 when absent.
absl::StatusOr<int> Length(const Json& schema, const char* keyword, const std::string& pointer) {
  if (!schema.contains(keyword)) return -1;
  const Json& value = schema[keyword];
  const bool whole =
      value.is_number_integer() ||
      (value.is_number_float() && value.get<double>() == static_cast<int64_t>(value.get<double>()));
  if (!whole || value.get<double>() < 0) {
    return SchemaError(ChildPointer(pointer, keyword),
                       absl::StrCat(keyword, ": must be a non-negative integer"));
  }
  // Past what is ever generated: clamped, so the count stays small.
  return value.get<double>() > kMaxStringStates ? kMaxStringStates
                                                : static_cast<int>(value.get<double>());
}

// The pattern's automaton, or why it has none.
absl::StatusOr<CodePointDfa> Pattern(const Json& schema) {
  const Json& pattern = schema["pattern"];
  if (!pattern.is_string()) {
    return absl::InvalidArgumentError(
        "keyword 'pattern' must be a string (an ECMA-262 regular expression)");
  }
  absl::StatusOr<CodePointDfa> dfa = CompileRegex(pattern.get<std::string>());
  if (!dfa.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("keyword 'pattern' is not supported so: ", dfa.status().message(),
                     " (see the regular expression subset in the structured-output docs)"));
  }
  return dfa;
}

// The format's automaton, or null when it is not one compiled.
const CodePointDfa* Format(const Json& schema) {
  const Json& format = schema["format"];
  return format.is_string() ? FindFormat(format.get<std::string>()) : nullptr;
}

}  // namespace

absl::Status CheckStringKeyword(const Json& schema, absl::string_view key) {
  if (key == "pattern") return Pattern(schema).status();
  if (Format(schema) != nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("keyword 'format' is not supported for ", schema["format"].dump(),
                   " (supported: ", absl::StrJoin(FormatNames(), ", "), ")"));
}

absl::StatusOr<std::optional<StringAutomaton>> CompileStringKeywords(const Json& schema,
                                                                     const std::string& pointer) {
  absl::StatusOr<int> min_length = Length(schema, "minLength", pointer);
  if (!min_length.ok()) return min_length.status();
  absl::StatusOr<int> max_length = Length(schema, "maxLength", pointer);
  if (!max_length.ok()) return max_length.status();
  std::optional<CodePointDfa> dfa;
  if (schema.contains("pattern")) {
    absl::StatusOr<CodePointDfa> pattern = Pattern(schema);
    if (!pattern.ok())
      return SchemaError(ChildPointer(pointer, "pattern"), pattern.status().message());
    dfa = *std::move(pattern);
  }
  if (const CodePointDfa* format = schema.contains("format") ? Format(schema) : nullptr) {
    if (!dfa) {
      dfa = *format;
    } else {
      absl::StatusOr<CodePointDfa> both = IntersectDfas(*dfa, *format, kMaxStringStates);
      if (!both.ok()) return SchemaError(pointer, both.status().message());
      dfa = *std::move(both);
    }
  }
  if (!dfa && *min_length < 0 && *max_length < 0) return std::nullopt;
  absl::StatusOr<StringAutomaton> automaton =
      StringAutomaton::Build(dfa ? *dfa : AnyTextDfa(), std::max(*min_length, 0), *max_length);
  if (!automaton.ok()) return SchemaError(pointer, automaton.status().message());
  return *std::move(automaton);
}

}  // namespace arbor::grammar
