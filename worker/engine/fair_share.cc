#include "worker/engine/fair_share.h"

#include <algorithm>

namespace arbor::worker {

std::vector<int32_t> FairShares(const std::vector<int32_t>& wanted, int32_t budget, size_t turn) {
  const size_t n = wanted.size();
  std::vector<int32_t> shares(n, 0);
  // Raise every unsatisfied job's share by the same level until the budget is spent or all are
  // satisfied: each round either satisfies a job or leaves less budget than there are jobs.
  int32_t left = budget;
  while (left > 0) {
    std::vector<size_t> hungry;
    for (size_t j = 0; j < n; ++j) {
      if (shares[j] < wanted[j]) hungry.push_back(j);
    }
    if (hungry.empty()) break;
    const int32_t level = left / static_cast<int32_t>(hungry.size());
    if (level == 0) {  // The remainder: one token each, from job `turn` on.
      std::rotate(hungry.begin(),
                  std::lower_bound(hungry.begin(), hungry.end(), turn % n), hungry.end());
      for (size_t k = 0; k < static_cast<size_t>(left); ++k) ++shares[hungry[k]];
      break;
    }
    for (size_t j : hungry) {
      const int32_t add = std::min(level, wanted[j] - shares[j]);
      shares[j] += add;
      left -= add;
    }
  }
  for (size_t j = 0; j < n; ++j) {
    if (wanted[j] > 0) shares[j] = std::max(shares[j], 1);
  }
  return shares;
}

}  // namespace arbor::worker
