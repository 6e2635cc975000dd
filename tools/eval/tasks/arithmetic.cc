#include "tools/eval/tasks/arithmetic.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tools/eval/tasks/family.h"

namespace arbor::tools::eval {
namespace {

int64_t PowerOfTen(int exponent) {
  int64_t p = 1;
  for (int i = 0; i < exponent; ++i) p *= 10;
  return p;
}

// A number with exactly `digits` digits; single digits start at 2 for products, where 0 and 1
// would make the item trivial.
int64_t RandomWithDigits(int digits, int64_t min_single_digit, TaskRng& rng) {
  if (digits <= 1) return rng.Between(min_single_digit, 9);
  return rng.Between(PowerOfTen(digits - 1), PowerOfTen(digits) - 1);
}

nlohmann::json MakeArithmeticItem(int level, TaskRng& rng) {
  const Expression e = RandomExpression(level, rng);
  nlohmann::json item =
      ChatItem(absl::StrCat("What is ", e.Text(), "? Answer with just the number."),
               absl::StrCat(e.Value()), "number");
  item["max_tokens"] = 32;
  return item;
}

}  // namespace

int64_t Expression::Value() const {
  switch (op) {
    case '+':
      return lhs + rhs;
    case '-':
      return lhs - rhs;
    default:
      return lhs * rhs;
  }
}

std::string Expression::Text() const {
  return absl::StrCat(lhs, " ", std::string(1, op), " ", rhs);
}

Expression RandomExpression(int level, TaskRng& rng) {
  Expression e;
  if (level <= 1) {
    e.lhs = rng.Between(1, 9);
    e.rhs = rng.Between(1, 9);
    return e;
  }
  constexpr char kOps[] = {'+', '-', '*'};
  e.op = rng.Pick(kOps);
  if (e.op == '*') {
    e.lhs = RandomWithDigits((level + 1) / 2, 2, rng);
    e.rhs = RandomWithDigits(level / 2, 2, rng);
  } else {
    e.lhs = RandomWithDigits(level, 1, rng);
    e.rhs = RandomWithDigits(level, 1, rng);
    if (e.op == '-' && e.lhs < e.rhs) std::swap(e.lhs, e.rhs);
  }
  return e;
}

const TaskFamily& ArithmeticFamily() {
  static constexpr TaskFamily kFamily{"arithmetic", kArithmeticMaxLevel, &MakeArithmeticItem};
  return kFamily;
}

}  // namespace arbor::tools::eval
