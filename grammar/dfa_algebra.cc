// The DFA operations of dfa_algebra.h.
#include "grammar/dfa_algebra.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace arbor::grammar {
namespace {

// `ranges` with neighbours that touch and lead to the same `block` joined, as (lo, hi, block)
// triples: two states are equivalent exactly when these and their acceptance agree.
std::vector<uint32_t> Signature(const CodePointDfa::State& state, const std::vector<int32_t>& block,
                                int32_t own_block) {
  std::vector<uint32_t> out = {static_cast<uint32_t>(own_block)};
  for (const CodePointRange& range : state.ranges) {
    const uint32_t next = static_cast<uint32_t>(block[range.next]);
    const size_t n = out.size();
    if (n > 1 && out[n - 1] == next && out[n - 2] + 1 == range.lo) {
      out[n - 2] = range.hi;
    } else {
      out.insert(out.end(), {range.lo, range.hi, next});
    }
  }
  return out;
}

}  // namespace

std::vector<bool> LiveStates(const std::vector<CodePointDfa::State>& states) {
  std::vector<std::vector<int32_t>> sources(states.size());
  std::vector<bool> live(states.size(), false);
  std::vector<int32_t> ready;
  for (size_t s = 0; s < states.size(); ++s) {
    for (const CodePointRange& range : states[s].ranges) {
      sources[range.next].push_back(static_cast<int32_t>(s));
    }
    if (states[s].accepting) {
      live[s] = true;
      ready.push_back(static_cast<int32_t>(s));
    }
  }
  while (!ready.empty()) {
    const int32_t s = ready.back();
    ready.pop_back();
    for (int32_t source : sources[s]) {
      if (!live[source]) {
        live[source] = true;
        ready.push_back(source);
      }
    }
  }
  return live;
}

std::vector<int32_t> RefineBlocks(const std::vector<CodePointDfa::State>& states,
                                  std::vector<int32_t> block, int rounds) {
  for (size_t blocks = 0; rounds != 0; --rounds) {
    absl::flat_hash_map<std::vector<uint32_t>, int32_t> ids;
    std::vector<int32_t> refined(states.size());
    for (size_t s = 0; s < states.size(); ++s) {
      auto [it, unused] =
          ids.emplace(Signature(states[s], block, block[s]), static_cast<int32_t>(ids.size()));
      refined[s] = it->second;
    }
    block = std::move(refined);
    if (ids.size() == blocks) break;
    blocks = ids.size();
  }
  return block;
}

CodePointDfa MinimizeDfa(const CodePointDfa& dfa) {
  const std::vector<bool> live = LiveStates(dfa.states);
  if (!live[0]) return CodePointDfa{.states = {CodePointDfa::State{}}};
  std::vector<CodePointDfa::State> states = dfa.states;
  for (CodePointDfa::State& state : states) {
    std::erase_if(state.ranges, [&](const CodePointRange& r) { return !live[r.next]; });
  }
  // Blocks of equivalent states. Dead states stay in a block of their own, never reached.
  std::vector<int32_t> block(states.size());
  for (size_t s = 0; s < states.size(); ++s) block[s] = !live[s] ? 2 : states[s].accepting;
  block = RefineBlocks(states, std::move(block), -1);
  // The minimal DFA's states in the order they are reached from the start.
  std::vector<int32_t> id_of_block(states.size(), -1);
  std::vector<size_t> representative = {0};
  id_of_block[block[0]] = 0;
  CodePointDfa out;
  for (size_t i = 0; i < representative.size(); ++i) {
    const CodePointDfa::State& state = states[representative[i]];
    CodePointDfa::State merged{.ranges = {}, .accepting = state.accepting};
    for (const CodePointRange& range : state.ranges) {
      int32_t& id = id_of_block[block[range.next]];
      if (id < 0) {
        id = static_cast<int32_t>(representative.size());
        representative.push_back(range.next);
      }
      if (!merged.ranges.empty() && merged.ranges.back().next == id &&
          merged.ranges.back().hi + 1 == range.lo) {
        merged.ranges.back().hi = range.hi;
      } else {
        merged.ranges.push_back({range.lo, range.hi, id});
      }
    }
    out.states.push_back(std::move(merged));
  }
  return out;
}

absl::StatusOr<CodePointDfa> IntersectDfas(const CodePointDfa& a, const CodePointDfa& b,
                                           int max_states) {
  absl::flat_hash_map<std::pair<int32_t, int32_t>, int32_t> ids = {{{0, 0}, 0}};
  std::vector<std::pair<int32_t, int32_t>> pairs = {{0, 0}};
  CodePointDfa product;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const CodePointDfa::State& x = a.states[pairs[i].first];
    const CodePointDfa::State& y = b.states[pairs[i].second];
    CodePointDfa::State state{.ranges = {}, .accepting = x.accepting && y.accepting};
    // Both range lists are sorted: walk them together.
    for (size_t p = 0, q = 0; p < x.ranges.size() && q < y.ranges.size();) {
      const CodePointRange& r = x.ranges[p];
      const CodePointRange& s = y.ranges[q];
      const uint32_t lo = std::max(r.lo, s.lo), hi = std::min(r.hi, s.hi);
      if (lo <= hi) {
        auto [it, added] =
            ids.emplace(std::pair(r.next, s.next), static_cast<int32_t>(pairs.size()));
        if (added) {
          if (static_cast<int>(pairs.size()) >= max_states) {
            return absl::InvalidArgumentError(
                absl::StrCat("the string's pattern and format together need more than ", max_states,
                             " automaton states"));
          }
          pairs.push_back(it->first);
        }
        state.ranges.push_back({lo, hi, it->second});
      }
      if (r.hi < s.hi) {
        ++p;
      } else {
        ++q;
      }
    }
    product.states.push_back(std::move(state));
  }
  return MinimizeDfa(product);
}

}  // namespace arbor::grammar
