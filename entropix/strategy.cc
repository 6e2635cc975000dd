#include "entropix/strategy.h"

namespace arbor::entropix {

absl::string_view StrategyName(Strategy strategy) {
  switch (strategy) {
    case Strategy::kArgmax:
      return "ARGMAX";
    case Strategy::kAdaptive:
      return "ADAPTIVE";
    case Strategy::kBranch:
      return "BRANCH";
    case Strategy::kInsert:
      return "INSERT";
    case Strategy::kBackspace:
      return "BACKSPACE";
    case Strategy::kHotSample:
      return "HOT_SAMPLE";
    case Strategy::kResample:
      return "RESAMPLE";
    case Strategy::kBranchSample:
      return "BRANCH_SAMPLE";
    case Strategy::kForced:
      return "FORCED";
  }
  return "UNKNOWN";
}

}  // namespace arbor::entropix
