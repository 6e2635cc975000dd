// The numeric bounds of number_bounds.h.
#include "grammar/number_bounds.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

// The shortest decimal that parses back to `x` (below kNumberLimit in magnitude), rounded to 15
// fraction digits up (toward +infinity) or down.
Decimal ToDecimal(double x, bool up) {
  // 16 integer digits, the point and the farthest digit of the least subnormal double.
  char text[400];
  const std::to_chars_result written =
      std::to_chars(std::begin(text), std::end(text), std::abs(x), std::chars_format::fixed);
  const std::string_view digits(text, written.ptr - text);
  const size_t point = std::min(digits.find('.'), digits.size());
  Decimal magnitude;
  for (size_t i = 0; i < point; ++i) magnitude.whole = magnitude.whole * 10 + (digits[i] - '0');
  bool rest = false;  // Nonzero digits past the 15th.
  for (size_t i = point + 1; i < digits.size(); ++i) {
    const int position = static_cast<int>(i - point);
    if (position <= kFractionDigits) {
      magnitude.fraction += (digits[i] - '0') * Pow10(kFractionDigits - position);
    } else {
      rest = rest || digits[i] != '0';
    }
  }
  // Rounding the magnitude toward zero rounds x down when positive, up when negative.
  if (rest && up == (x > 0)) {
    if (++magnitude.fraction == kFractionScale) magnitude = {magnitude.whole + 1, 0};
  }
  return x < 0 ? magnitude.Negated() : magnitude;
}

// A bound's value as the inclusive Decimal it allows; nothing when it is no number. Values
// beyond kNumberLimit (exact ones included: they are past 2^53) clamp to it.
std::optional<Decimal> Rounded(const Json& value, bool lower, bool exclusive) {
  if (IsExactNumber(value)) {
    const bool negative = value.get_binary().front() == '-';
    return Decimal{negative ? -kNumberLimit : kNumberLimit, 0};
  }
  if (!value.is_number() || value.is_boolean()) return std::nullopt;
  double x = value.get<double>();
  if (exclusive) x = std::nextafter(x, lower ? HUGE_VAL : -HUGE_VAL);
  if (x >= static_cast<double>(kNumberLimit)) return Decimal{kNumberLimit, 0};
  if (x <= -static_cast<double>(kNumberLimit)) return Decimal{-kNumberLimit, 0};
  return ToDecimal(x, /*up=*/lower);
}

absl::StatusOr<int64_t> MultipleOf(const Json& value, const std::string& pointer) {
  const std::string at = ChildPointer(pointer, "multipleOf");
  if (!IsExactNumber(value) && value.is_number() && value.get<double>() > 0 &&
      value.get<double>() < static_cast<double>(kNumberLimit) &&
      value.get<double>() == std::floor(value.get<double>())) {
    return static_cast<int64_t>(value.get<double>());
  }
  if (value.is_number() && value.get<double>() > 0) {
    return SchemaError(at,
                       "keyword 'multipleOf' is supported with a positive integer below 10^16 "
                       "only");
  }
  return SchemaError(at, "multipleOf: must be a number above 0");
}

// Whether some number the matcher writes satisfies the bounds.
bool Satisfiable(const NumberBounds& bounds) {
  const int64_t reach = Pow10(kMaxNumberDigits) - 1;
  if (bounds.integer_only) return Holds(bounds, -reach, reach);
  const Decimal farthest = {reach, kFractionScale - 1};
  return std::max(bounds.low, farthest.Negated()) <= std::min(bounds.high, farthest);
}

// The bounds on a number's magnitude: [low, high], or [-high, -low] for a negative number.
Decimal MagnitudeLow(const NumberBounds& bounds, bool negative) {
  return negative ? bounds.high.Negated() : bounds.low;
}
Decimal MagnitudeHigh(const NumberBounds& bounds, bool negative) {
  return negative ? bounds.low.Negated() : bounds.high;
}

// Digit `position` (from 1) of a bound's fraction.
int FractionDigitOf(const Decimal& bound, int position) {
  return static_cast<int>(bound.fraction / Pow10(kFractionDigits - position) % 10);
}

}  // namespace

Decimal Decimal::Negated() const {
  return fraction == 0 ? Decimal{-whole, 0} : Decimal{-whole - 1, kFractionScale - fraction};
}

absl::StatusOr<NumberBounds> ParseNumberBounds(const Json& schema, const std::string& pointer,
                                               bool integer) {
  NumberBounds bounds;
  struct Keyword {
    const char* name;
    bool lower;
    bool exclusive;
  };
  std::vector<std::string> present;
  for (const Keyword& k :
       {Keyword{"minimum", true, false}, Keyword{"maximum", false, false},
        Keyword{"exclusiveMinimum", true, true}, Keyword{"exclusiveMaximum", false, true}}) {
    if (!schema.contains(k.name)) continue;
    const std::optional<Decimal> value = Rounded(schema[k.name], k.lower, k.exclusive);
    if (!value) {
      return SchemaError(ChildPointer(pointer, k.name), absl::StrCat(k.name, ": must be a number"));
    }
    bounds.bounded = true;
    present.push_back(absl::StrCat(k.name, " ", DumpExactJson(schema[k.name])));
    if (k.lower) {
      bounds.low = std::max(bounds.low, *value);
    } else {
      bounds.high = std::min(bounds.high, *value);
    }
  }
  bounds.min = bounds.low.whole + (bounds.low.fraction > 0);
  bounds.max = bounds.high.whole;
  bounds.integer_only = integer;
  if (schema.contains("multipleOf")) {
    ASSIGN_OR_RETURN(bounds.multiple_of, MultipleOf(schema["multipleOf"], pointer));
    present.push_back(absl::StrCat("multipleOf ", bounds.multiple_of));
    bounds.bounded = true;
    bounds.integer_only = true;
  }
  if (!Satisfiable(bounds)) {
    return SchemaError(
        pointer,
        absl::StrCat("no ", bounds.integer_only ? "integer" : "number", " of at most ",
                     kMaxNumberDigits, " integer",
                     bounds.integer_only ? "" : absl::StrCat(" and ", kFractionDigits, " fraction"),
                     " digits satisfies the numeric bounds (", absl::StrJoin(present, ", "), ")"));
  }
  return bounds;
}

bool PrefixViable(const NumberBounds& bounds, bool negative, int64_t magnitude, int digits) {
  // Whether an integer part of magnitude in [low, high] can go on to a number in bounds.
  auto holds = [&](int64_t low, int64_t high) {
    if (bounds.integer_only) {
      return negative ? Holds(bounds, -high, -low) : Holds(bounds, low, high);
    }
    return std::max(low, MagnitudeLow(bounds, negative).whole) <=
           std::min(high, MagnitudeHigh(bounds, negative).whole);
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

std::optional<FractionTight> StartFraction(const NumberBounds& bounds, bool negative,
                                           int64_t magnitude) {
  if (bounds.integer_only) return std::nullopt;
  const Decimal low = MagnitudeLow(bounds, negative);
  const Decimal high = MagnitudeHigh(bounds, negative);
  if (magnitude < low.whole || magnitude > high.whole) return std::nullopt;
  return FractionTight{.low = magnitude == low.whole && low.fraction > 0,
                       .high = magnitude == high.whole};
}

std::optional<FractionTight> FractionDigit(const NumberBounds& bounds, bool negative,
                                           FractionTight tight, int position, int digit) {
  // Both bounds' digits continue any prefix they share, so a digit between them always leaves
  // a way on (the lower bound's own digits).
  if (tight.low) {
    const int bound = FractionDigitOf(MagnitudeLow(bounds, negative), position);
    if (digit < bound) return std::nullopt;
    tight.low = digit == bound;
  }
  if (tight.high) {
    const int bound = FractionDigitOf(MagnitudeHigh(bounds, negative), position);
    if (digit > bound) return std::nullopt;
    tight.high = digit == bound;
  }
  return tight;
}

bool FractionMayEnd(const NumberBounds& bounds, bool negative, FractionTight tight, int digits) {
  // Equal to the upper bound's digits so far is at most it; to the lower one's, at least it only
  // when its remaining digits are zeros.
  return !tight.low ||
         MagnitudeLow(bounds, negative).fraction % Pow10(kFractionDigits - digits) == 0;
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
