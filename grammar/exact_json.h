// JSON read and written back without losing a number's digits: a JSON Schema's `const` or
// `enum` value such as 123456789012345678901234567890 must be generated as written, yet a
// double keeps 17 significant digits and 64-bit integers stop at 2^64. Numbers a double cannot
// hold exactly (magnitude 2^53 and above, outside the 64-bit integer types) keep their literal
// text as a binary value of subtype kExactNumberSubtype, which JSON text itself cannot produce.
#ifndef ARBOR_GRAMMAR_EXACT_JSON_H_
#define ARBOR_GRAMMAR_EXACT_JSON_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace arbor::grammar {

inline constexpr uint8_t kExactNumberSubtype = 0x4e;

// Parses `text`; INVALID_ARGUMENT "not valid JSON: …", or "nested deeper than `max_depth`
// levels of objects and arrays" as soon as a container opens inside `max_depth` others.
absl::StatusOr<nlohmann::ordered_json> ParseExactJson(absl::string_view text, int max_depth);

// Whether `value` is a number kept as its literal text.
bool IsExactNumber(const nlohmann::ordered_json& value);

// Compact JSON text of `value`, exact numbers as their literal text.
std::string DumpExactJson(const nlohmann::ordered_json& value);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_EXACT_JSON_H_
