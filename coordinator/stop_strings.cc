#include "coordinator/stop_strings.h"

#include <algorithm>
#include <utility>

namespace arbor::coordinator {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stop_strings) {
  for (std::string& s : stop_strings) {
    if (!s.empty()) stop_strings_.push_back(std::move(s));
  }
}

std::optional<size_t> StopStringMatcher::FirstMatch(const std::string& text) const {
  std::optional<size_t> first;
  for (const std::string& s : stop_strings_) {
    const size_t at = text.find(s);
    if (at != std::string::npos && (!first || at < *first)) first = at;
  }
  return first;
}

}  // namespace arbor::coordinator
