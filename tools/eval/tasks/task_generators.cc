#include "tools/eval/tasks/task_generators.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "tools/eval/tasks/family.h"
#include "tools/eval/tasks/rng.h"

namespace arbor::tools::eval {
namespace {

// How many times an item that repeats an earlier question is redrawn before it is kept anyway
// (a level with few distinct questions, such as single-digit sums, runs out of new ones).
constexpr int kRedraws = 16;

const std::vector<const TaskFamily*>& Registry() {
  static const std::vector<const TaskFamily*> kRegistry = {&ArithmeticFamily(),
                                                           &WordProblemsFamily(), &CountingFamily(),
                                                           &LettersFamily(), &ChoiceFamily()};
  return kRegistry;
}

absl::StatusOr<const TaskFamily*> FindFamily(std::string_view name) {
  for (const TaskFamily* family : Registry()) {
    if (family->name == name) return family;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("family: unknown task family \"", absl::string_view(name.data(), name.size()),
                   "\"; known families: ", absl::StrJoin(TaskFamilies(), ", ")));
}

// What makes two items the same question.
std::string QuestionKey(const nlohmann::json& item) {
  std::string key = item["messages"].dump();
  if (item.contains("choices")) absl::StrAppend(&key, item["choices"].dump());
  return key;
}

}  // namespace

std::vector<std::string> TaskFamilies() {
  std::vector<std::string> names;
  for (const TaskFamily* family : Registry()) names.emplace_back(family->name);
  return names;
}

absl::StatusOr<int> MaxLevel(std::string_view family) {
  ASSIGN_OR_RETURN(const TaskFamily* found, FindFamily(family));
  return found->max_level;
}

absl::StatusOr<std::vector<nlohmann::json>> GenerateTasks(std::string_view family, int level,
                                                          int count, uint64_t seed) {
  ASSIGN_OR_RETURN(const TaskFamily* found, FindFamily(family));
  const TaskFamily& spec = *found;
  if (level < 1 || level > spec.max_level) {
    return absl::InvalidArgumentError(absl::StrCat("level: ", level, " is out of range for family ",
                                                   spec.name, " (1..", spec.max_level, ")"));
  }
  if (count < 0 || count > kMaxTaskCount) {
    return absl::InvalidArgumentError(
        absl::StrCat("count: ", count, " is out of range (0..", kMaxTaskCount, ")"));
  }

  TaskRng rng(StreamSeed(spec.name, level, seed));
  std::set<std::string> questions;
  std::vector<nlohmann::json> items;
  items.reserve(count);
  for (int index = 0; index < count; ++index) {
    nlohmann::json item = spec.make_item(level, rng);
    for (int redraw = 0; redraw < kRedraws && questions.count(QuestionKey(item)) > 0; ++redraw) {
      item = spec.make_item(level, rng);
    }
    questions.insert(QuestionKey(item));
    item["id"] = absl::StrCat(spec.name, "-L", level, "-s", seed, "-", index);
    item["family"] = std::string(spec.name);
    item["level"] = level;
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace arbor::tools::eval
