// CompileRegex on arbitrary bytes (a schema's `pattern` is untrusted input): it compiles or
// answers INVALID_ARGUMENT, within its limits. What compiles must be a well-formed DFA (ranges
// sorted, disjoint, to existing states), already minimal, and unchanged by intersecting it with
// any text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "grammar/dfa_algebra.h"
#include "grammar/regex_dfa.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using arbor::grammar::CodePointDfa;
  const std::string pattern(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<CodePointDfa> dfa = arbor::grammar::CompileRegex(pattern);
  if (!dfa.ok()) {
    if (dfa.status().code() != absl::StatusCode::kInvalidArgument) abort();
    return 0;
  }
  if (dfa->states.empty() || dfa->states.size() > arbor::grammar::kMaxRegexDfaStates) abort();
  for (const CodePointDfa::State& state : dfa->states) {
    for (size_t i = 0; i < state.ranges.size(); ++i) {
      const arbor::grammar::CodePointRange& r = state.ranges[i];
      if (r.lo > r.hi || r.hi > arbor::grammar::kMaxCodePoint || r.next < 0 ||
          static_cast<size_t>(r.next) >= dfa->states.size()) {
        abort();
      }
      if (i > 0 && state.ranges[i - 1].hi >= r.lo) abort();
    }
  }
  if (arbor::grammar::MinimizeDfa(*dfa).states.size() != dfa->states.size()) abort();
  absl::StatusOr<CodePointDfa> same =
      arbor::grammar::IntersectDfas(*dfa, arbor::grammar::AnyTextDfa(), 1 << 20);
  if (!same.ok() || same->states.size() != dfa->states.size()) abort();
  return 0;
}
