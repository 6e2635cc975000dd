// Numeric keywords (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`)
// as the matcher enforces them while a number is written, digit by digit: a digit is taken only
// when some number that goes on from it satisfies every bound, and the number ends only where it
// does, so no generated number is out of bounds and no walk reaches a dead end.
//
// A bound means what validators compare against: the double the schema's number parses to.
// It is kept as an exact decimal, the shortest text that parses back to that double (0.1 is
// 0.1, not 0.1000000000000000055…), and an exclusive bound as the inclusive bound of the next
// double inside it (exclusiveMinimum 0 is minimum 5e-324), so a generated number D satisfies
// D >= L exactly as decimals, and then its own double does too, since rounding to doubles is
// monotone. Generated numbers have at most 15 fraction digits, so the bounds are rounded inward
// to that precision (any D with 15 significant digits or fewer that a validator accepts is
// still allowed). Numbers have no exponent under bounds, and `multipleOf` (a positive integer)
// makes them integers.
//
// The integer part is checked against its value (up to 15 digits); a fraction then only needs,
// at each digit, whether the digits so far still equal the lower or the upper bound's digits
// (FractionTight): while equal, a digit may not pass that bound's digit, and once it differs
// every continuation satisfies that bound.
#ifndef ARBOR_GRAMMAR_NUMBER_BOUNDS_H_
#define ARBOR_GRAMMAR_NUMBER_BOUNDS_H_

#include <bitset>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arbor::grammar {

// Past every number the matcher writes (at most 15 integer digits): a bound beyond it binds
// nothing.
inline constexpr int64_t kNumberLimit = 10'000'000'000'000'000;
// Fraction digits a bound keeps: those a generated number may write (kMaxNumberDigits).
inline constexpr int kFractionDigits = 15;
inline constexpr int64_t kFractionScale = 1'000'000'000'000'000;  // 10^kFractionDigits.

// whole + fraction / 10^15, fraction in [0, 10^15): a decimal of at most 15 fraction digits.
struct Decimal {
  int64_t whole = 0;
  int64_t fraction = 0;

  auto operator<=>(const Decimal&) const = default;
  Decimal Negated() const;
};

struct NumberBounds {
  bool bounded = false;              // Any keyword: the matcher tracks the integer part's value.
  bool integer_only = false;         // No fraction or exponent (an integer type, or `multipleOf`).
  Decimal low = {-kNumberLimit, 0};  // Inclusive, on the 10^-15 grid.
  Decimal high = {kNumberLimit, 0};
  int64_t min = -kNumberLimit;  // The integers [min, max] in [low, high].
  int64_t max = kNumberLimit;
  int64_t multiple_of = 1;
};

// The bounds of `schema`'s numeric keywords (integer: the schema's type is "integer").
// INVALID_ARGUMENT at `pointer` for a malformed value, a `multipleOf` that is not a positive
// integer, or bounds no number the matcher writes satisfies (naming the keywords).
absl::StatusOr<NumberBounds> ParseNumberBounds(const nlohmann::ordered_json& schema,
                                               const std::string& pointer, bool integer);

// Whether a number whose integer part's magnitude has the first `digits` digits of value
// `magnitude` (no digit yet when 0 digits; a leading 0 ends the digits) can satisfy the bounds.
bool PrefixViable(const NumberBounds& bounds, bool negative, int64_t magnitude, int digits);
// Whether the integer (-1)^negative * magnitude satisfies them.
bool ContainsInteger(const NumberBounds& bounds, bool negative, int64_t magnitude);

// While a fraction is written: whether its digits so far equal those of the bound on the
// magnitude from below (low) or from above (high). For a negative number the magnitude's lower
// bound is -maximum and its upper one -minimum.
struct FractionTight {
  bool low = false;
  bool high = false;
};
// Whether a fraction may follow that integer part, and how tight it starts; nothing when none
// may.
std::optional<FractionTight> StartFraction(const NumberBounds& bounds, bool negative,
                                           int64_t magnitude);
// The fraction's digit `position` (from 1, at most 15) is `digit`: how tight it is after it, or
// nothing when no number going on from it satisfies the bounds.
std::optional<FractionTight> FractionDigit(const NumberBounds& bounds, bool negative,
                                           FractionTight tight, int position, int digit);
// Whether the number may end after `digits` fraction digits.
bool FractionMayEnd(const NumberBounds& bounds, bool negative, FractionTight tight, int digits);

// The bytes a bounded number can start with.
std::bitset<256> NumberFirstBytes(const NumberBounds& bounds);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_NUMBER_BOUNDS_H_
