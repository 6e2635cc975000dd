// The "arithmetic" family: one binary operation on integers, "What is 37 + 45?".
//
// Level L (1..8) sets the operand size. Level 1 is a sum of two single digits, which a small
// instruct model mostly gets right. From level 2 the operation is +, - or * with equal chance:
// + and - take two L-digit operands (a - b with a >= b, so no negative results); * takes
// operands of ceil(L/2) and floor(L/2) digits, because a product of two L-digit numbers is far
// harder than their sum and would make each level a cliff rather than a step. Level 8 is an
// eight-digit sum or a four-by-four-digit product. Matched as a number, no extract regex (the
// last number in the output).
//
// RandomExpression is shared with the "choice" family, which asks the same questions with
// answer options.
#ifndef ARBOR_TOOLS_EVAL_TASKS_ARITHMETIC_H_
#define ARBOR_TOOLS_EVAL_TASKS_ARITHMETIC_H_

#include <cstdint>
#include <string>

#include "tools/eval/tasks/rng.h"

namespace arbor::tools::eval {

inline constexpr int kArithmeticMaxLevel = 8;

struct Expression {
  int64_t lhs = 0;
  char op = '+';  // '+', '-' or '*'
  int64_t rhs = 0;

  int64_t Value() const;
  std::string Text() const;  // "37 + 45"
};

// An expression at `level` (1..kArithmeticMaxLevel), drawn as the header comment describes.
Expression RandomExpression(int level, TaskRng& rng);

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_TASKS_ARITHMETIC_H_
