// Stop strings (DESIGN.md §4.4) on a job's committed text. Workers see tokens, not text, and a
// stop string can span several tokens, so the coordinator checks the decoded committed text
// after every committed token and reports the text cut just before the first match.
#ifndef ARBOR_COORDINATOR_STOP_STRINGS_H_
#define ARBOR_COORDINATOR_STOP_STRINGS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace arbor::coordinator {

class StopStringMatcher {
 public:
  // Empty strings are ignored (validation refuses them anyway).
  explicit StopStringMatcher(std::vector<std::string> stop_strings);

  bool empty() const { return stop_strings_.empty(); }

  // The byte offset where the earliest match in `text` starts, or nullopt. Earliest so that
  // the reported text never contains any stop string, whichever one completed first.
  std::optional<size_t> FirstMatch(const std::string& text) const;

 private:
  std::vector<std::string> stop_strings_;
};

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_STOP_STRINGS_H_
