// The "choice" family: multiple choice scored by log-likelihood, so the harness compares the
// model's probability of each option instead of generating. Each item is one of two kinds:
//
//   sum:       What is 17 + 25? Options: 42, 41, 52, 32.
//              The expression is the arithmetic family's at the same level (level 1: single
//              digits, +), and the three wrong options come closer as the level rises: 3-9 away
//              at levels 1-2, 1, 2, 10 or 20 away at 3-4, 1, 10 or 100 away at 5-6.
//   category:  Which of these is a fruit? Options: lemon, chair, red, boat.
//              Levels 1, 2, 3 offer 2, 3, 4 options, all wrong ones from unrelated categories;
//              levels 4, 5, 6 offer 4 options of which 1, 2, 3 come from a sibling category
//              (fruit against vegetable; mammal, bird, fish against one another).
//
// Options are listed in the prompt in a random order and are scored as the assistant's reply,
// so they carry no leading space.
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "tools/eval/tasks/arithmetic.h"
#include "tools/eval/tasks/family.h"
#include "tools/eval/tasks/words.h"

namespace arbor::tools::eval {
namespace {

constexpr int kChoiceMaxLevel = 6;
constexpr size_t kOptions = 4;

nlohmann::json ChoiceItem(std::string question, absl::string_view format, std::string answer,
                          std::vector<std::string> options, TaskRng& rng) {
  rng.Shuffle(options);
  nlohmann::json item = ChatItem(absl::StrCat(question, " Options: ", absl::StrJoin(options, ", "),
                                              ". Answer with just the ", format, "."),
                                 std::move(answer), "exact");
  item["choices"] = options;
  return item;
}

nlohmann::json SumItem(int level, TaskRng& rng) {
  const Expression e = RandomExpression(level, rng);
  const int64_t value = e.Value();
  std::vector<int64_t> offsets;
  if (level <= 2) {
    for (int64_t d = 3; d <= 9; ++d) offsets.push_back(d);
  } else if (level <= 4) {
    offsets = {1, 2, 10, 20};
  } else {
    offsets = {1, 10, 100};
  }
  std::set<int64_t> seen = {value};
  std::vector<std::string> options = {absl::StrCat(value)};
  while (options.size() < kOptions) {
    const int64_t offset = rng.Pick(offsets);
    const bool below = rng.Chance(1, 2);
    // Above when below would go negative: a negative option would give itself away.
    const int64_t wrong = below && value >= offset ? value - offset : value + offset;
    if (seen.insert(wrong).second) options.push_back(absl::StrCat(wrong));
  }
  return ChoiceItem(absl::StrCat("What is ", e.Text(), "?"), "number", absl::StrCat(value),
                    std::move(options), rng);
}

nlohmann::json CategoryItem(int level, TaskRng& rng) {
  const std::span<const WordCategory> categories = WordCategories();
  const size_t n_options = level <= 3 ? static_cast<size_t>(level) + 1 : kOptions;
  const size_t n_near = level <= 3 ? 0 : static_cast<size_t>(level) - 3;

  // The target category: from level 4, one with a sibling to draw near misses from.
  std::vector<size_t> targets;
  for (size_t i = 0; i < categories.size(); ++i) {
    bool has_sibling = false;
    for (size_t j = 0; j < categories.size(); ++j) {
      has_sibling |= j != i && categories[j].group == categories[i].group;
    }
    if (n_near == 0 || has_sibling) targets.push_back(i);
  }
  const WordCategory& target = categories[rng.Pick(targets)];

  std::vector<size_t> near, far;
  for (size_t j = 0; j < categories.size(); ++j) {
    if (categories[j].name == target.name) continue;
    (categories[j].group == target.group ? near : far).push_back(j);
  }
  std::string answer(rng.Pick(target.words));
  std::set<absl::string_view> seen = {answer};
  std::vector<std::string> options = {answer};
  while (options.size() < n_options) {
    const std::vector<size_t>& from = options.size() <= n_near ? near : far;
    const WordCategory& other = categories[rng.Pick(from)];
    const absl::string_view wrong = rng.Pick(other.words);
    if (seen.insert(wrong).second) options.emplace_back(wrong);
  }
  return ChoiceItem(absl::StrCat("Which of these is ", target.phrase, "?"), "word",
                    std::move(answer), std::move(options), rng);
}

nlohmann::json MakeChoiceItem(int level, TaskRng& rng) {
  return rng.Chance(1, 2) ? SumItem(level, rng) : CategoryItem(level, rng);
}

}  // namespace

const TaskFamily& ChoiceFamily() {
  static constexpr TaskFamily kFamily{"choice", kChoiceMaxLevel, &MakeChoiceItem};
  return kFamily;
}

}  // namespace arbor::tools::eval
