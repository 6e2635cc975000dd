// What the policy chose at one step; mirrors enum arbor.v1.Strategy (docs/ARCHITECTURE.md §4.2).
#ifndef ARBOR_ENTROPIX_STRATEGY_H_
#define ARBOR_ENTROPIX_STRATEGY_H_

#include "absl/strings/string_view.h"

namespace arbor::entropix {

enum class Strategy {
  kArgmax,        // LELV: the most likely token.
  kAdaptive,      // Default row: adaptive multi-sample with the canonical score.
  kBranch,        // LEHV in SEARCH mode: explore several continuations.
  kInsert,        // HELV: append the thinking token(s).
  kBackspace,     // HEHV in SEARCH mode: remove and re-draw the previous token.
  kHotSample,     // HELV sample (insert not possible).
  kResample,      // HEHV sample (CANONICAL, or backspace not possible).
  kBranchSample,  // LEHV sample (CANONICAL, or branch blocked by max_depth).
  kForced,        // Not chosen by the model: prompt, inserted or branch-candidate token.
};

// Upper-case name as in the proto without its prefix: "ARGMAX", "BRANCH_SAMPLE", ...
absl::string_view StrategyName(Strategy strategy);

// BRANCH, INSERT and BACKSPACE change the tree; a worker returns control on them.
inline bool IsStructural(Strategy strategy) {
  return strategy == Strategy::kBranch || strategy == Strategy::kInsert ||
         strategy == Strategy::kBackspace;
}

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_STRATEGY_H_
