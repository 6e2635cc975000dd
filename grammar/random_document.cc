// The matcher walk of random_document.h.
#include "grammar/random_document.h"

#include <array>
#include <cstdint>
#include <vector>

#include "grammar/json_matcher.h"

namespace arbor::grammar {
namespace {

// How much a walk past its budget wants a byte: higher first.
int Rank(uint8_t byte) {
  switch (byte) {
    case '}':
    case ']':
    case '"':
      return 4;
    case ':':
      return 3;
    case ',':
    case '{':
    case '[':
    case '\\':
    case ' ':
    case '\n':
    case '\t':
      return 0;
    default:
      return byte < 0x80 ? 2 : 1;
  }
}

}  // namespace

std::optional<std::string> RandomDocument(const JsonGrammar& grammar, std::mt19937_64& rng,
                                          size_t budget, size_t max_bytes) {
  JsonMatcher matcher(&grammar);
  std::string text;
  std::vector<uint8_t> accepted;
  std::vector<JsonMatcher> after;
  while (text.size() < max_bytes) {
    const bool over = text.size() >= budget;
    // Ending where it may is one more choice; past the budget it is the first.
    if (matcher.AcceptsEnd() &&
        (matcher.Complete() || over || std::uniform_int_distribution<int>(0, 7)(rng) == 0)) {
      return text;
    }
    accepted.clear();
    after.clear();
    int best = -1;
    for (int byte = 0; byte < 256; ++byte) {
      JsonMatcher copy = matcher;
      if (copy.Feed(static_cast<uint8_t>(byte)) != JsonMatcher::Fed::kAccepted) continue;
      const int rank = over ? Rank(static_cast<uint8_t>(byte)) : 0;
      if (rank < best) continue;
      if (rank > best) {
        best = rank;
        accepted.clear();
        after.clear();
      }
      accepted.push_back(static_cast<uint8_t>(byte));
      after.push_back(std::move(copy));
    }
    // A number at the root with no digit left ends; anything else is a dead end (the grammar's
    // bug, for the caller to find).
    if (accepted.empty()) return matcher.AcceptsEnd() ? std::optional(text) : std::nullopt;
    const size_t pick = std::uniform_int_distribution<size_t>(0, accepted.size() - 1)(rng);
    text += static_cast<char>(accepted[pick]);
    matcher = std::move(after[pick]);
  }
  return std::nullopt;
}

}  // namespace arbor::grammar
