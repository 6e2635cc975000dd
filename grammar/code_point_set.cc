// The code point sets of code_point_set.h.
#include "grammar/code_point_set.h"

#include <algorithm>

#include "grammar/string_automaton.h"

namespace arbor::grammar {

CodePointSet::CodePointSet(std::vector<std::pair<uint32_t, uint32_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  for (const auto& [lo, hi] : ranges) {
    if (lo > hi) continue;
    // Overlapping or adjacent: one range.
    if (!ranges_.empty() && lo <= ranges_.back().second + 1) {
      ranges_.back().second = std::max(ranges_.back().second, hi);
    } else {
      ranges_.emplace_back(lo, hi);
    }
  }
}

CodePointSet CodePointSet::All() { return CodePointSet({{0, kMaxCodePoint}}); }

CodePointSet CodePointSet::Union(const CodePointSet& other) const {
  std::vector<std::pair<uint32_t, uint32_t>> both = ranges_;
  both.insert(both.end(), other.ranges_.begin(), other.ranges_.end());
  return CodePointSet(std::move(both));
}

CodePointSet CodePointSet::Complement() const {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  uint32_t next = 0;  // The first code point not yet covered or skipped.
  for (const auto& [lo, hi] : ranges_) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return CodePointSet(std::move(out));
}

CodePointSet CodePointSet::Intersect(const CodePointSet& other) const {
  return Complement().Union(other.Complement()).Complement();
}

bool CodePointSet::Contains(uint32_t code_point) const {
  auto it = std::upper_bound(
      ranges_.begin(), ranges_.end(), code_point,
      [](uint32_t cp, const std::pair<uint32_t, uint32_t>& r) { return cp < r.first; });
  return it != ranges_.begin() && code_point <= std::prev(it)->second;
}

}  // namespace arbor::grammar
