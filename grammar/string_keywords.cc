// The string keywords of string_keywords.h.
#include "grammar/string_keywords.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "grammar/schema_error.h"

namespace arbor::grammar {
namespace {

using Json = nlohmann::ordered_json;

// A length keyword's value: a non-negative integer (a larger one than any string generated
// binds as that limit); -1 when absent.
absl::StatusOr<int> Length(const Json& schema, const char* keyword, const std::string& pointer) {
  if (!schema.contains(keyword)) return -1;
  const Json& value = schema[keyword];
  const bool whole = value.is_number_integer() ||
                     (value.is_number_float() && value.get<double>() == static_cast<int64_t>(
                                                                             value.get<double>()));
  if (!whole || value.get<double>() < 0) {
    return SchemaError(ChildPointer(pointer, keyword),
                       absl::StrCat(keyword, ": must be a non-negative integer"));
  }
  // Past what is ever generated: clamped, so the count stays small.
  return value.get<double>() > kMaxStringStates ? kMaxStringStates
                                                : static_cast<int>(value.get<double>());
}

}  // namespace

absl::StatusOr<std::optional<StringAutomaton>> CompileStringKeywords(const Json& schema,
                                                                      const std::string& pointer) {
  absl::StatusOr<int> min_length = Length(schema, "minLength", pointer);
  if (!min_length.ok()) return min_length.status();
  absl::StatusOr<int> max_length = Length(schema, "maxLength", pointer);
  if (!max_length.ok()) return max_length.status();
  if (*min_length < 0 && *max_length < 0) return std::nullopt;
  absl::StatusOr<StringAutomaton> automaton =
      StringAutomaton::Build(AnyTextDfa(), std::max(*min_length, 0), *max_length);
  if (!automaton.ok()) return SchemaError(pointer, automaton.status().message());
  return *std::move(automaton);
}

}  // namespace arbor::grammar
