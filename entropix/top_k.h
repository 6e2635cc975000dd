// Top-K selection without sorting the whole vocabulary: the logit metrics' top-K (a bounded
// heap over a 128,256-wide row) and the sampler's top_k filter (partial selection over the
// candidates that survived min_p). One ordering everywhere: value descending, then index
// ascending, so ties resolve the same way on every machine.
#ifndef ARBOR_ENTROPIX_TOP_K_H_
#define ARBOR_ENTROPIX_TOP_K_H_

#include <cstdint>
#include <limits>
#include <vector>

namespace arbor::entropix {

struct ScoredIndex {
  float value;
  int32_t index;
};

// The canonical order: larger value first, lower index first among equal values.
inline bool RanksBefore(const ScoredIndex& a, const ScoredIndex& b) {
  return a.value > b.value || (a.value == b.value && a.index < b.index);
}

// Keeps the k best of a stream of items offered in increasing index order: a heap whose front is
// the worst kept item. A later equal value never ranks before a kept one, so once k items are
// held a strict `>` against the front is the whole test and most offers cost one comparison.
class TopKStream {
 public:
  explicit TopKStream(int64_t k);  // k ≥ 1.
  void Offer(float value, int32_t index) {
    if (static_cast<int64_t>(best_.size()) < k_) return Fill({value, index});
    if (value >= bar_) Replace({value, index});
  }
  // The least value an offer must reach to change what is kept: −inf until k items are held,
  // then the next float above the worst kept one. Lets a scan skip most items with one test.
  float bar() const { return bar_; }
  // The kept items in the canonical order.
  std::vector<ScoredIndex> TakeSorted() &&;

 private:
  void Fill(ScoredIndex item);
  void Replace(ScoredIndex item);
  void RaiseBar();

  int64_t k_;
  std::vector<ScoredIndex> best_;
  float bar_;
};

// The min(k, n) largest of values[0..n) (no NaN), in the canonical order.
std::vector<ScoredIndex> SelectTopK(const float* values, int64_t n, int64_t k);

// Keeps the min(k, size) first items of `items` in the canonical order and sorts them; k < 0
// keeps everything (sorted).
void KeepTopK(std::vector<ScoredIndex>& items, int64_t k);

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_TOP_K_H_
