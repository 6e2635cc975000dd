// What a task family hands the registry (task_generators.cc), and the item shape they share.
//
// A family turns (level, random stream) into one item's content; the registry stamps the id,
// family and level, so every family numbers and labels its items the same way.
#ifndef ARBOR_TOOLS_EVAL_TASKS_FAMILY_H_
#define ARBOR_TOOLS_EVAL_TASKS_FAMILY_H_

#include <string>
#include <string_view>

#include "nlohmann/json.hpp"
#include "tools/eval/tasks/rng.h"

namespace arbor::tools::eval {

struct TaskFamily {
  const char* name;
  int max_level;  // levels run 1..max_level, easiest first
  // One item's content: "messages", "answer", "match" and, as the family needs, "extract",
  // "choices" and "max_tokens". `level` is within 1..max_level.
  nlohmann::json (*make_item)(int level, TaskRng& rng);
};

// An item whose prompt is one user message.
nlohmann::json ChatItem(std::string user_text, std::string answer, std::string_view match);

// The families, one per file.
const TaskFamily& ArithmeticFamily();
const TaskFamily& WordProblemsFamily();
const TaskFamily& CountingFamily();
const TaskFamily& LettersFamily();
const TaskFamily& ChoiceFamily();

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_TASKS_FAMILY_H_
