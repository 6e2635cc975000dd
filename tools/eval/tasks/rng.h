// The random source every task generator draws from, portable across standard libraries.
//
// The standard fixes std::mt19937_64's output sequence but leaves the distributions
// (std::uniform_int_distribution, std::shuffle) to each implementation, so a task set drawn
// through them would differ between libstdc++ and libc++. TaskRng keeps the engine and does its
// own unbiased bounded draws and shuffles, so the same seed gives the same items everywhere.
#ifndef ARBOR_TOOLS_EVAL_TASKS_RNG_H_
#define ARBOR_TOOLS_EVAL_TASKS_RNG_H_

#include <cstdint>
#include <iterator>
#include <random>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace arbor::tools::eval {

// One step of splitmix64: a bijective 64-bit mixer, so distinct inputs give distinct outputs.
uint64_t SplitMix64(uint64_t x);

// The engine seed for items of (family, level, seed). Every argument is mixed in, so different
// seeds (calibration versus evaluation) or levels give unrelated streams rather than shifted
// copies of one stream.
uint64_t StreamSeed(std::string_view family, int level, uint64_t seed);

class TaskRng {
 public:
  explicit TaskRng(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, n); n must be > 0. Rejection sampling, so no value is favoured.
  uint64_t Below(uint64_t n);
  // Uniform in [lo, hi], both inclusive; lo <= hi.
  int64_t Between(int64_t lo, int64_t hi);
  // True with probability num/den.
  bool Chance(uint64_t num, uint64_t den) { return Below(den) < num; }

  // A uniformly chosen element of a non-empty random-access range.
  template <typename Range>
  const auto& Pick(const Range& items) {
    return items[Below(std::size(items))];
  }

  // `n` distinct positions' elements (n <= size), in draw order: a partial Fisher-Yates.
  template <typename Range>
  auto Sample(const Range& items, size_t n) {
    std::vector<std::decay_t<decltype(items[0])>> pool(std::begin(items), std::end(items));
    for (size_t i = 0; i < n; ++i) {
      using std::swap;
      swap(pool[i], pool[i + Below(pool.size() - i)]);
    }
    pool.resize(n);
    return pool;
  }

  // Fisher-Yates with Below(), in place.
  template <typename Range>
  void Shuffle(Range& items) {
    using std::swap;
    for (size_t i = std::size(items); i > 1; --i) {
      swap(items[i - 1], items[Below(i)]);
    }
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace arbor::tools::eval

#endif  // ARBOR_TOOLS_EVAL_TASKS_RNG_H_
