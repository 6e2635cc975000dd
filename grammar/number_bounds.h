// Numeric keywords (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`)
// as the matcher enforces them while a number is written, digit by digit: a digit is taken only
// when some number that goes on from it satisfies every bound, and the number ends only where it
// does, so no generated number is out of bounds and no walk reaches a dead end.
//
// Exact by construction rather than by comparing decimals with the schema's doubles: bounds are
// rounded inward to the integers [min, max] they allow, and a number's integer part I must lie
// in them; a fraction may follow only when the whole unit step from I away from zero (I + 1, or
// -(I + 1)) lies in them too, so every I.ddd is between two allowed integers. Under bounds a
// number has no exponent, and `multipleOf` (a positive integer) makes it an integer.
#ifndef ARBOR_GRAMMAR_NUMBER_BOUNDS_H_
#define ARBOR_GRAMMAR_NUMBER_BOUNDS_H_

#include <bitset>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace arbor::grammar {

// Past every number the matcher writes (at most 15 integer digits): a bound beyond it binds
// nothing.
inline constexpr int64_t kNumberLimit = 10'000'000'000'000'000;

struct NumberBounds {
  bool bounded = false;       // Any keyword: the matcher tracks the integer part's value.
  bool integer_only = false;  // No fraction or exponent (`multipleOf`).
  int64_t min = -kNumberLimit;
  int64_t max = kNumberLimit;
  int64_t multiple_of = 1;
};

// The bounds of `schema`'s numeric keywords (integer: the schema's type is "integer").
// INVALID_ARGUMENT at `pointer` for a malformed value, a `multipleOf` that is not a positive
// integer, or bounds no number the matcher writes satisfies.
absl::StatusOr<NumberBounds> ParseNumberBounds(const nlohmann::ordered_json& schema,
                                               const std::string& pointer, bool integer);

// Whether an integer whose magnitude's first `digits` digits have the value `magnitude` (no
// digit yet when 0 digits; a leading 0 ends the digits) can satisfy the bounds.
bool PrefixViable(const NumberBounds& bounds, bool negative, int64_t magnitude, int digits);
// Whether the integer (-1)^negative * magnitude satisfies them.
bool ContainsInteger(const NumberBounds& bounds, bool negative, int64_t magnitude);
// Whether a fraction may follow that integer part.
bool FractionAllowed(const NumberBounds& bounds, bool negative, int64_t magnitude);
// The bytes a bounded number can start with.
std::bitset<256> NumberFirstBytes(const NumberBounds& bounds);

}  // namespace arbor::grammar

#endif  // ARBOR_GRAMMAR_NUMBER_BOUNDS_H_
