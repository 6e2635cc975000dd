#include "entropix/top_k.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace arbor::entropix {

std::vector<ScoredIndex> SelectTopK(const float* values, int64_t n, int64_t k) {
  k = std::min(k, n);
  if (k <= 0) return {};
  if (k * 8 >= n) {  // Large K: partial selection over every index.
    std::vector<ScoredIndex> best(n);
    for (int64_t i = 0; i < n; ++i) best[i] = {values[i], static_cast<int32_t>(i)};
    KeepTopK(best, k);
    return best;
  }
  TopKStream stream(k);
  for (int64_t i = 0; i < n; ++i) stream.Offer(values[i], static_cast<int32_t>(i));
  return std::move(stream).TakeSorted();
}

TopKStream::TopKStream(int64_t k) : k_(k), bar_(-std::numeric_limits<float>::infinity()) {
  best_.reserve(k);
}

void TopKStream::Fill(ScoredIndex item) {
  best_.push_back(item);
  if (static_cast<int64_t>(best_.size()) == k_) {
    std::make_heap(best_.begin(), best_.end(), RanksBefore);
    RaiseBar();
  }
}

void TopKStream::Replace(ScoredIndex item) {
  std::pop_heap(best_.begin(), best_.end(), RanksBefore);
  best_.back() = item;
  std::push_heap(best_.begin(), best_.end(), RanksBefore);
  RaiseBar();
}

void TopKStream::RaiseBar() {
  bar_ = std::nextafter(best_.front().value, std::numeric_limits<float>::infinity());
}

std::vector<ScoredIndex> TopKStream::TakeSorted() && {
  std::sort(best_.begin(), best_.end(), RanksBefore);
  return std::move(best_);
}

void KeepTopK(std::vector<ScoredIndex>& items, int64_t k) {
  if (k >= 0 && k < static_cast<int64_t>(items.size())) {
    std::nth_element(items.begin(), items.begin() + k, items.end(), RanksBefore);
    items.resize(k);
  }
  std::sort(items.begin(), items.end(), RanksBefore);
}

}  // namespace arbor::entropix
