#include "entropix/top_k.h"

#include <algorithm>

namespace arbor::entropix {

std::vector<ScoredIndex> SelectTopK(const float* values, int64_t n, int64_t k) {
  k = std::min(k, n);
  if (k <= 0) return {};
  std::vector<ScoredIndex> best;
  if (k * 8 >= n) {  // Large K: partial selection over every index.
    best.resize(n);
    for (int64_t i = 0; i < n; ++i) best[i] = {values[i], static_cast<int32_t>(i)};
    KeepTopK(best, k);
    return best;
  }
  // Small K: a heap whose front is the worst kept item. Scanning in index order, a later equal
  // value never ranks before a kept one, so a strict `>` against the front is the whole test and
  // almost every element costs one comparison.
  best.reserve(k);
  for (int64_t i = 0; i < k; ++i) best.push_back({values[i], static_cast<int32_t>(i)});
  std::make_heap(best.begin(), best.end(), RanksBefore);
  for (int64_t i = k; i < n; ++i) {
    if (values[i] > best.front().value) {
      std::pop_heap(best.begin(), best.end(), RanksBefore);
      best.back() = {values[i], static_cast<int32_t>(i)};
      std::push_heap(best.begin(), best.end(), RanksBefore);
    }
  }
  std::sort(best.begin(), best.end(), RanksBefore);
  return best;
}

void KeepTopK(std::vector<ScoredIndex>& items, int64_t k) {
  if (k >= 0 && k < static_cast<int64_t>(items.size())) {
    std::nth_element(items.begin(), items.begin() + k, items.end(), RanksBefore);
    items.resize(k);
  }
  std::sort(items.begin(), items.end(), RanksBefore);
}

}  // namespace arbor::entropix
