#include "tools/eval/tasks/family.h"

#include <utility>

namespace arbor::tools::eval {

nlohmann::json ChatItem(std::string user_text, std::string answer, std::string_view match) {
  nlohmann::json item;
  item["messages"] =
      nlohmann::json::array({nlohmann::json{{"role", "user"}, {"content", std::move(user_text)}}});
  item["answer"] = std::move(answer);
  item["match"] = std::string(match);
  return item;
}

}  // namespace arbor::tools::eval
