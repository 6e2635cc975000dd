// The pattern compiler of regex_dfa.h.
#include "grammar/regex_dfa.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "grammar/code_point_set.h"
#include "grammar/dfa_algebra.h"
#include "grammar/regex_parser.h"

namespace arbor::grammar {
namespace {

// An NFA edge: a code point of `set`, or none (empty), or none where the string begins or ends.
struct Edge {
  enum class Kind : uint8_t { kCodePoint, kEmpty, kBegin, kEnd };
  Kind kind;
  int32_t to;
  CodePointSet set = {};
};

// A Thompson NFA: each construct is built from a state and returns the state it ends in.
class Nfa {
 public:
  std::vector<std::vector<Edge>> edges;
  bool overflow = false;

  int32_t NewState() {
    if (edges.size() >= kMaxRegexNfaStates) overflow = true;
    edges.emplace_back();
    return static_cast<int32_t>(edges.size() - 1);
  }

  int32_t Build(const RegexNode& node, int32_t from) {
    if (overflow) return from;
    switch (node.kind) {
      case RegexNode::Kind::kSet:
        return Step(from, Edge::Kind::kCodePoint, node.set);
      case RegexNode::Kind::kBegin:
        return Step(from, Edge::Kind::kBegin, {});
      case RegexNode::Kind::kEnd:
        return Step(from, Edge::Kind::kEnd, {});
      case RegexNode::Kind::kConcat:
        for (const RegexNode& child : node.children) from = Build(child, from);
        return from;
      case RegexNode::Kind::kAlternation: {
        const int32_t end = NewState();
        for (const RegexNode& child : node.children) Empty(Build(child, from), end);
        return end;
      }
      case RegexNode::Kind::kRepeat:
        return Repeat(node, from);
    }
    return from;
  }

  // An empty move from `from` to `to`.
  void Empty(int32_t from, int32_t to) { edges[from].push_back({Edge::Kind::kEmpty, to}); }

  // A state that loops on every code point after `from`.
  int32_t AnyText(int32_t from) {
    const int32_t loop = NewState();
    Empty(from, loop);
    edges[loop].push_back({Edge::Kind::kCodePoint, loop, CodePointSet::All()});
    return loop;
  }

 private:
  int32_t Step(int32_t from, Edge::Kind kind, const CodePointSet& set) {
    const int32_t to = NewState();
    edges[from].push_back({kind, to, set});
    return to;
  }

  // min copies of the child, then max - min optional ones, or a loop when max is unbounded.
  int32_t Repeat(const RegexNode& node, int32_t from) {
    for (int i = 0; i < node.min && !overflow; ++i) from = Build(node.children[0], from);
    if (node.max < 0) {
      const int32_t loop = NewState();
      Empty(from, loop);
      Empty(Build(node.children[0], loop), loop);
      return loop;
    }
    const int32_t end = NewState();
    for (int i = node.min; i < node.max && !overflow; ++i) {
      Empty(from, end);
      from = Build(node.children[0], from);
    }
    Empty(from, end);
    return end;
  }
};

// The subset construction over an NFA whose `accept` state ends a match.
class SubsetBuilder {
 public:
  SubsetBuilder(const Nfa& nfa, int32_t accept) : nfa_(nfa), accept_(accept) {}

  absl::StatusOr<CodePointDfa> Build(int32_t start) {
    // The start is its own DFA state: only there do ^ edges hold.
    sets_.push_back(Closure({start}, /*begin=*/true, /*end=*/false));
    dfa_.states.push_back(
        {.ranges = {}, .accepting = Contains(Closure(sets_[0], true, true), accept_)});
    for (size_t i = 0; i < sets_.size(); ++i) {
      if (sets_.size() > kMaxRegexDfaStates) {
        return absl::InvalidArgumentError(absl::StrCat(
            "a pattern whose automaton needs more than ", kMaxRegexDfaStates,
            " states is not supported (an unanchored pattern with a bounded repeat of a wide "
            "class near its start is the usual cause: anchor it with ^ or narrow it)"));
      }
      dfa_.states[i].ranges = Moves(sets_[i]);
    }
    return MinimizeDfa(dfa_);
  }

 private:
  static bool Contains(const std::vector<int32_t>& set, int32_t state) {
    return std::binary_search(set.begin(), set.end(), state);
  }

  // The states reached from `states` by empty moves (and ^ or $ ones when they hold), sorted.
  std::vector<int32_t> Closure(std::vector<int32_t> states, bool begin, bool end) const {
    std::vector<bool> seen(nfa_.edges.size(), false);
    for (int32_t s : states) seen[s] = true;
    for (size_t i = 0; i < states.size(); ++i) {
      for (const Edge& edge : nfa_.edges[states[i]]) {
        const bool follows = edge.kind == Edge::Kind::kEmpty ||
                             (begin && edge.kind == Edge::Kind::kBegin) ||
                             (end && edge.kind == Edge::Kind::kEnd);
        if (follows && !seen[edge.to]) {
          seen[edge.to] = true;
          states.push_back(edge.to);
        }
      }
    }
    std::sort(states.begin(), states.end());
    return states;
  }

  // The DFA state of an NFA state set reached after a code point, added when new. A set holding
  // the accepting state is that state alone: a match was found, whatever follows is accepted.
  int32_t StateOf(std::vector<int32_t> targets) {
    std::vector<int32_t> set = Closure(std::move(targets), false, false);
    if (Contains(set, accept_)) set = {accept_};
    auto [it, added] = ids_.emplace(set, static_cast<int32_t>(sets_.size()));
    if (added) {
      dfa_.states.push_back(
          {.ranges = {}, .accepting = Contains(Closure(set, false, true), accept_)});
      sets_.push_back(std::move(set));
    }
    return it->second;
  }

  // The transitions of `set`: its code-point edges cut into intervals that lead to the same
  // targets, each interval's targets one DFA state.
  std::vector<CodePointRange> Moves(const std::vector<int32_t>& set) {
    std::vector<const Edge*> moves;
    std::vector<uint32_t> cuts;
    for (int32_t s : set) {
      for (const Edge& edge : nfa_.edges[s]) {
        if (edge.kind != Edge::Kind::kCodePoint) continue;
        moves.push_back(&edge);
        for (const auto& [lo, hi] : edge.set.ranges()) cuts.insert(cuts.end(), {lo, hi + 1});
      }
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<CodePointRange> ranges;
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      std::vector<int32_t> targets;
      for (const Edge* edge : moves) {
        if (edge->set.Contains(cuts[c])) targets.push_back(edge->to);
      }
      if (targets.empty()) continue;
      const int32_t next = StateOf(std::move(targets));
      if (!ranges.empty() && ranges.back().next == next && ranges.back().hi + 1 == cuts[c]) {
        ranges.back().hi = cuts[c + 1] - 1;
      } else {
        ranges.push_back({cuts[c], cuts[c + 1] - 1, next});
      }
    }
    return ranges;
  }

  const Nfa& nfa_;
  const int32_t accept_;
  std::vector<std::vector<int32_t>> sets_;
  absl::flat_hash_map<std::vector<int32_t>, int32_t> ids_;
  CodePointDfa dfa_;
};

}  // namespace

absl::StatusOr<CodePointDfa> CompileRegex(absl::string_view pattern) {
  absl::StatusOr<RegexNode> tree = ParseRegex(pattern);
  if (!tree.ok()) return tree.status();
  Nfa nfa;
  const int32_t start = nfa.NewState();
  // Search: any text before the match and after it.
  const int32_t accept = nfa.AnyText(nfa.Build(*tree, nfa.AnyText(start)));
  if (nfa.overflow) {
    return absl::InvalidArgumentError(absl::StrCat("a pattern whose repeats expand to more than ",
                                                   kMaxRegexNfaStates,
                                                   " automaton states is not supported"));
  }
  return SubsetBuilder(nfa, accept).Build(start);
}

}  // namespace arbor::grammar
