// The "word_problems" family: short stories about one running quantity, "Ava has 7 marbles. Ava
// finds 5 more marbles. ... How many marbles does Ava have now?".
//
// Level L (1..6) is the number of arithmetic operations between the starting amount and the
// answer. Levels 1 and 2 only add and take away; from level 3 a step may also add equal groups
// ("3 packs with 4 in each": a product and a sum, so it counts two), double or triple the amount,
// or split it into equal parts and keep one (an exact division). Numbers stay small (start 2..20,
// steps 2..12, groups of 2..10), an amount is never taken below 1, and a division is only drawn
// when it comes out exact, so every intermediate quantity is a positive integer. Seven story
// templates (a collection, baking, a shop, savings, a bus, eggs, a class library) with varied
// names, objects and phrasings. The answer is computed by applying the steps. Matched as a
// number (the last number in the output).
#ifndef ARBOR_TOOLS_EVAL_TASKS_WORD_PROBLEMS_H_
#define ARBOR_TOOLS_EVAL_TASKS_WORD_PROBLEMS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tools/eval/tasks/rng.h"

namespace arbor::tools::eval {

inline constexpr int kWordProblemsMaxLevel = 6;

enum class StepKind {
  kAdd,        // + a
  kSubtract,   // - a
  kAddGroups,  // + a * b (a groups of b)
  kMultiply,   // * a
  kShare,      // / a, exact
};

// How many arithmetic operations a step is: two for kAddGroups, one otherwise.
int StepOperations(StepKind kind);

struct Step {
  StepKind kind;
  int64_t a = 0;
  int64_t b = 0;  // kAddGroups only
};

// A problem in structured form beside its text, so tests can re-apply the steps.
struct WordProblem {
  int64_t start = 0;
  std::vector<Step> steps;
  std::string text;  // the whole user message
  int64_t answer = 0;
};

// A problem at `level` (1..kWordProblemsMaxLevel).
WordProblem MakeWordProblem(int level, TaskRng& rng);

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_TASKS_WORD_PROBLEMS_H_
