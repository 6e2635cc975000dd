// The crossed string automaton of string_automaton.h.
#include "grammar/string_automaton.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "grammar/dfa_algebra.h"

namespace arbor::grammar {
namespace {

// The code points a constrained string writes (see the header).
constexpr std::pair<uint32_t, uint32_t> kWritable[] = {
    {0x08, 0x0A}, {0x0C, 0x0D}, {0x20, 0xD7FF}, {0xE000, kMaxCodePoint}};

std::vector<CodePointRange> Writable(const std::vector<CodePointRange>& ranges) {
  std::vector<CodePointRange> out;
  for (const CodePointRange& range : ranges) {
    for (const auto& [lo, hi] : kWritable) {
      const uint32_t low = std::max(lo, range.lo), high = std::min(hi, range.hi);
      if (low <= high) out.push_back({low, high, range.next});
    }
  }
  return out;
}

}  // namespace

CodePointDfa AnyTextDfa() {
  CodePointDfa dfa;
  dfa.states.push_back({.ranges = {{0, kMaxCodePoint, 0}}, .accepting = true});
  return dfa;
}

absl::StatusOr<StringAutomaton> StringAutomaton::Build(const CodePointDfa& dfa, int min_length,
                                                       int max_length) {
  if (max_length >= 0 && min_length > max_length) {
    return absl::InvalidArgumentError("minLength: exceeds maxLength");
  }
  if (min_length > kMaxGeneratedLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("minLength: above ", kMaxGeneratedLength, " is not supported"));
  }
  // Lengths count up to `cap`: the bound when there is one (no transition past it), else
  // minLength, where the count stays.
  const bool bounded = max_length >= 0;
  const int cap = bounded ? std::min(max_length, kMaxGeneratedLength) : min_length;
  const int64_t width = cap + 1;
  absl::flat_hash_map<int64_t, int32_t> ids = {{0, 0}};
  std::vector<int64_t> keys = {0};  // dfa state * width + length, per state.
  StringAutomaton automaton;
  for (size_t i = 0; i < keys.size(); ++i) {
    const int32_t dfa_state = static_cast<int32_t>(keys[i] / width);
    const int length = static_cast<int>(keys[i] % width);
    CodePointDfa::State state;
    state.accepting = dfa.states[dfa_state].accepting && length >= min_length;
    if (!bounded || length < cap) {
      const int next_length = bounded ? length + 1 : std::min(length + 1, cap);
      for (CodePointRange range : Writable(dfa.states[dfa_state].ranges)) {
        const int64_t key = range.next * width + next_length;
        auto [it, added] = ids.emplace(key, static_cast<int32_t>(keys.size()));
        if (added) {
          if (keys.size() >= kMaxStringStates) {
            return absl::InvalidArgumentError(
                absl::StrCat("the string's pattern and length bounds need more than ",
                             kMaxStringStates, " automaton states"));
          }
          keys.push_back(key);
        }
        range.next = it->second;
        state.ranges.push_back(range);
      }
    }
    automaton.states_.push_back(std::move(state));
  }
  const std::vector<bool> live = LiveStates(automaton.states_);
  if (!live[kStart]) {
    return absl::InvalidArgumentError(
        "no string of the allowed lengths matches the pattern and format in the characters "
        "generated (raw, or the short escapes \\b \\f \\n \\r \\t: no other control character)");
  }
  for (CodePointDfa::State& state : automaton.states_) {
    std::erase_if(state.ranges, [&](const CodePointRange& r) { return !live[r.next]; });
    std::sort(state.ranges.begin(), state.ranges.end(),
              [](const CodePointRange& x, const CodePointRange& y) { return x.lo < y.lo; });
  }
  // A live state with count n >= minLength shares its pattern position with a state of count
  // b in [minLength, n] (states are found breadth-first, so the first such is the fewest): a
  // token's path from it counts b - n fewer code points, so the lower bound still holds and the
  // upper binds less. The base is live because the state's completions fit it too.
  absl::flat_hash_map<int32_t, int32_t> fewest;
  automaton.bases_.resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const int32_t dfa_state = static_cast<int32_t>(keys[i] / width);
    const int length = static_cast<int>(keys[i] % width);
    automaton.bases_[i] = static_cast<int32_t>(i);
    if (!bounded || length < min_length || !live[i]) continue;
    automaton.bases_[i] = fewest.emplace(dfa_state, static_cast<int32_t>(i)).first->second;
  }
  return automaton;
}

std::vector<int32_t> StringAutomaton::Representatives(int horizon) const {
  std::vector<int32_t> block(states_.size());
  for (size_t s = 0; s < states_.size(); ++s) block[s] = states_[s].accepting;
  block = RefineBlocks(states_, std::move(block), horizon);
  absl::flat_hash_map<int32_t, int32_t> first;
  std::vector<int32_t> representative(states_.size());
  for (size_t s = 0; s < states_.size(); ++s) {
    representative[s] = first.emplace(block[s], static_cast<int32_t>(s)).first->second;
  }
  return representative;
}

std::vector<std::pair<int32_t, int>> StringAutomaton::Nearest(
    const std::vector<int32_t>& representative, int horizon) const {
  std::vector<bool> is_base(states_.size());
  for (size_t s = 0; s < states_.size(); ++s) {
    if (bases_[s] != static_cast<int32_t>(s)) is_base[bases_[s]] = true;
  }
  std::vector<std::pair<int32_t, int>> nearest(states_.size(), {-1, 0});
  std::vector<int32_t> block(states_.size());
  for (size_t s = 0; s < states_.size(); ++s) block[s] = states_[s].accepting;
  size_t blocks = 0;
  for (int k = 1; k < horizon; ++k) {
    block = RefineBlocks(states_, std::move(block), 1);  // Now blocks of strings up to k.
    absl::flat_hash_map<int32_t, int32_t> first;
    for (size_t s = 0; s < states_.size(); ++s) {
      const int32_t f = first.emplace(block[s], static_cast<int32_t>(s)).first->second;
      // The block's first state comes before s, so references end; its representative is what
      // the masker caches.
      if (representative[s] == static_cast<int32_t>(s) && !is_base[s] &&
          f != static_cast<int32_t>(s)) {
        nearest[s] = {representative[f], k};
      }
    }
    if (first.size() == blocks) break;  // Stable: no level further splits anything.
    blocks = first.size();
  }
  return nearest;
}

int32_t StringAutomaton::Next(int32_t state, uint32_t code_point) const {
  const std::vector<CodePointRange>& ranges = states_[state].ranges;
  auto it = std::upper_bound(ranges.begin(), ranges.end(), code_point,
                             [](uint32_t cp, const CodePointRange& r) { return cp < r.lo; });
  if (it == ranges.begin()) return -1;
  --it;
  return code_point <= it->hi ? it->next : -1;
}

bool StringAutomaton::Viable(int32_t state, uint32_t lo, uint32_t hi) const {
  const std::vector<CodePointRange>& ranges = states_[state].ranges;
  // The first range that ends at or after lo.
  auto it = std::lower_bound(ranges.begin(), ranges.end(), lo,
                             [](const CodePointRange& r, uint32_t cp) { return r.hi < cp; });
  return it != ranges.end() && it->lo <= hi;
}

}  // namespace arbor::grammar
