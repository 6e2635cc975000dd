// The numeric bounds of number_bounds.h.
#include "grammar/number_bounds.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "grammar/exact_json.h"
#include "grammar/json_matcher.h"
#include "grammar/schema_error.h"

namespace arbor::grammar {
namespace {

using Json = nlohmann::ordered_json;

int64_t Pow10(int n) {
  int64_t p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

// ceil(a / b) for b > 0.
int64_t CeilDiv(int64_t a, int64_t b) { return a / b + ((a % b != 0) && (a > 0)); }

// Whether [low, high] holds an allowed integer.
bool Holds(const NumberBounds& bounds, int64_t low, int64_t high) {
  low = std::max(low, bounds.min);
  high = std::min(high, bounds.max);
  return low <= high && CeilDiv(low, bounds.multiple_of) * bounds.multiple_of <= high;
}

// A bound's value rounded to the integers it allows; nothing when it is no number. Values beyond
// kNumberLimit (exact ones included: they are past 2^53) clamp to it.
std::optional<int64_t> Rounded(const Json& value, bool lower, bool exclusive) {
  if (IsExactNumber(value)) {
    const bool negative = value.get_binary().front() == '-';
    return negative ? -kNumberLimit : kNumberLimit;
  }
  if (!value.is_number() || value.is_boolean()) return std::nullopt;
  const double x = value.get<double>();
  if (x >= static_cast<double>(kNumberLimit)) return kNumberLimit;
  if (x <= -static_cast<double>(kNumberLimit)) return -kNumberLimit;
  if (value.is_number_integer()) {
    const int64_t n = value.get<int64_t>();
    return exclusive ? (lower ? n + 1 : n - 1) : n;
  }
  // Below 10^16 a double's floor and ceil are exact.
  if (lower) return static_cast<int64_t>(exclusive ? std::floor(x) + 1 : std::ceil(x));
  return static_cast<int64_t>(exclusive ? std::ceil(x) - 1 : std::floor(x));
}

absl::StatusOr<int64_t> MultipleOf(const Json& value, const std::string& pointer) {
  const std::string at = ChildPointer(pointer, "multipleOf");
  if (!IsExactNumber(value) && value.is_number() && value.get<double>() > 0 &&
      value.get<double>() < static_cast<double>(kNumberLimit) &&
      value.get<double>() == std::floor(value.get<double>())) {
    return static_cast<int64_t>(value.get<double>());
  }
  if (value.is_number() && value.get<double>() > 0) {
    return SchemaError(at, "keyword 'multipleOf' is supported with a positive integer below 10^16 "
                           "only");
  }
  return SchemaError(at, "multipleOf: must be a number above 0");
}

}  // namespace

absl::StatusOr<NumberBounds> ParseNumberBounds(const Json& schema, const std::string& pointer,
                                               bool integer) {
  NumberBounds bounds;
  struct Keyword {
    const char* name;
    bool lower;
    bool exclusive;
  };
  for (const Keyword& k : {Keyword{"minimum", true, false}, Keyword{"maximum", false, false},
                           Keyword{"exclusiveMinimum", true, true},
                           Keyword{"exclusiveMaximum", false, true}}) {
    if (!schema.contains(k.name)) continue;
    const std::optional<int64_t> value = Rounded(schema[k.name], k.lower, k.exclusive);
    if (!value) {
      return SchemaError(ChildPointer(pointer, k.name), absl::StrCat(k.name, ": must be a number"));
    }
    bounds.bounded = true;
    if (k.lower) {
      bounds.min = std::max(bounds.min, *value);
    } else {
      bounds.max = std::min(bounds.max, *value);
    }
  }
  if (schema.contains("multipleOf")) {
    ASSIGN_OR_RETURN(bounds.multiple_of, MultipleOf(schema["multipleOf"], pointer));
    bounds.bounded = true;
    bounds.integer_only = true;
  }
  const int64_t reach = Pow10(kMaxNumberDigits) - 1;
  if (!Holds(bounds, -reach, reach)) {
    return SchemaError(pointer, absl::StrCat("no ", integer ? "integer" : "number",
                                             " of at most ", kMaxNumberDigits,
                                             " integer digits satisfies the numeric bounds"));
  }
  return bounds;
}

bool PrefixViable(const NumberBounds& bounds, bool negative, int64_t magnitude, int digits) {
  auto holds = [&](int64_t low, int64_t high) {
    return negative ? Holds(bounds, -high, -low) : Holds(bounds, low, high);
  };
  if (digits == 0) return holds(0, Pow10(kMaxNumberDigits) - 1);
  if (magnitude == 0) return holds(0, 0);
  for (int more = 0; digits + more <= kMaxNumberDigits; ++more) {
    const int64_t scale = Pow10(more);
    if (holds(magnitude * scale, magnitude * scale + scale - 1)) return true;
  }
  return false;
}

bool ContainsInteger(const NumberBounds& bounds, bool negative, int64_t magnitude) {
  const int64_t value = negative ? -magnitude : magnitude;
  return Holds(bounds, value, value);
}

bool FractionAllowed(const NumberBounds& bounds, bool negative, int64_t magnitude) {
  if (bounds.integer_only) return false;
  const int64_t value = negative ? -magnitude : magnitude;
  const int64_t next = negative ? value - 1 : value + 1;
  return std::min(value, next) >= bounds.min && std::max(value, next) <= bounds.max;
}

std::bitset<256> NumberFirstBytes(const NumberBounds& bounds) {
  std::bitset<256> first;
  if (PrefixViable(bounds, /*negative=*/true, 0, 0)) first.set('-');
  for (int d = 0; d <= 9; ++d) {
    if (PrefixViable(bounds, /*negative=*/false, d, 1)) first.set('0' + d);
  }
  return first;
}

}  // namespace arbor::grammar
