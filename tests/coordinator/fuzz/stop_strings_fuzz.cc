// The stop-string matcher on fuzzer-chosen stop strings and text: FirstMatch finds exactly the
// earliest occurrence a naive search finds, and PossibleMatchLength is the longest suffix of the
// text that is a proper prefix of a stop string. Input: stop strings separated by '\n' up to a
// '\0', then the text.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/job/stop_strings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t split = std::min(input.find('\0'), input.size());
  std::vector<std::string> stops;
  size_t start = 0;
  while (start <= split && stops.size() < 16) {
    const size_t end = std::min(input.find('\n', start), split);
    if (end > start) stops.push_back(input.substr(start, std::min<size_t>(end - start, 64)));
    start = end + 1;
  }
  const std::string text = split < input.size() ? input.substr(split + 1) : "";
  arbor::coordinator::StopStringMatcher matcher(stops);

  std::optional<size_t> naive;
  for (const std::string& s : stops) {
    const size_t at = text.find(s);
    if (at != std::string::npos && (!naive || at < *naive)) naive = at;
  }
  if (matcher.FirstMatch(text) != naive) abort();

  size_t possible = 0;
  for (const std::string& s : stops) {
    for (size_t n = std::min(s.size() - 1, text.size()); n > possible; --n) {
      if (text.compare(text.size() - n, n, s, 0, n) == 0) {
        possible = n;
        break;
      }
    }
  }
  if (matcher.PossibleMatchLength(text) != possible) abort();
  return 0;
}
