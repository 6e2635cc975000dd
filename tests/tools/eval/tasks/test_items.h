// Helpers the task generator tests share: reading an item's prompt and applying an "extract"
// regex the way the task file format defines it.
#ifndef ARBOR_TESTS_TOOLS_EVAL_TASKS_TEST_ITEMS_H_
#define ARBOR_TESTS_TOOLS_EVAL_TASKS_TEST_ITEMS_H_

#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tools/eval/tasks/task_generators.h"

namespace arbor::tools::eval {

// The text of the item's one user message.
inline std::string UserText(const nlohmann::json& item) {
  return item.at("messages").at(0).at("content").get<std::string>();
}

// The last match of `pattern` in `output`: capture group 1 when the regex has a group, else the
// whole match; nullopt when nothing matches.
inline std::optional<std::string> Extract(const std::string& pattern, const std::string& output) {
  const std::regex re(pattern, std::regex::ECMAScript);
  std::optional<std::string> last;
  for (auto it = std::sregex_iterator(output.begin(), output.end(), re);
       it != std::sregex_iterator(); ++it) {
    last = re.mark_count() > 0 ? (*it)[1].str() : (*it)[0].str();
  }
  return last;
}

// Items that must generate; fails the calling test through the returned empty vector otherwise.
inline std::vector<nlohmann::json> MustGenerate(const std::string& family, int level, int count,
                                                uint64_t seed) {
  absl::StatusOr<std::vector<nlohmann::json>> items = GenerateTasks(family, level, count, seed);
  if (!items.ok()) {
    ADD_FAILURE() << family << " L" << level << " seed " << seed << ": " << items.status();
    return {};
  }
  return *std::move(items);
}

}  // namespace arbor::tools::eval

#endif  // ARBOR_TESTS_TOOLS_EVAL_TASKS_TEST_ITEMS_H_
