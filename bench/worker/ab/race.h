// The timing shared by the A/B races (attention_ab.sh, repacked_ab.sh): a base revision's version
// of a routine and the working tree's, called in turns within one process (the order swapped every
// round), so that both meet the same machine: on a shared VM whose speed drifts by more than the
// change under test, separate runs cannot tell a 10 % change from the drift.
#ifndef ARBOR_BENCH_WORKER_AB_RACE_H_
#define ARBOR_BENCH_WORKER_AB_RACE_H_

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace arbor::bench {

// Medians of each side's call and of the per-round ratios base / work (above 1: the working tree
// is faster), with the ratios' quartiles.
struct RaceResult {
  int rounds = 0;
  double base_us = 0, work_us = 0, ratio = 0, ratio_low = 0, ratio_high = 0;

  // The result's columns: rounds, base_us, work_us, base/work, quartiles.
  void Print() const {
    std::printf("%6d %10.1f %10.1f %7.3f  %.3f–%.3f\n", rounds, base_us, work_us, ratio, ratio_low,
                ratio_high);
  }
};

template <typename F>
double SecondsOf(const F& call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Rounds enough for about `budget` seconds of both sides, at least 5.
template <typename Base, typename Work>
RaceResult Race(const Base& base, const Work& work, double budget) {
  const double first = SecondsOf(work);
  const int rounds = std::max(5, static_cast<int>(budget / (2 * first)));
  std::vector<double> base_s, work_s, ratio;
  for (int r = 0; r < rounds; ++r) {
    double b, w;
    if (r % 2 == 0) {
      b = SecondsOf(base);
      w = SecondsOf(work);
    } else {
      w = SecondsOf(work);
      b = SecondsOf(base);
    }
    base_s.push_back(b);
    work_s.push_back(w);
    ratio.push_back(b / w);
  }
  for (std::vector<double>* v : {&base_s, &work_s, &ratio}) std::sort(v->begin(), v->end());
  return {rounds,
          base_s[rounds / 2] * 1e6,
          work_s[rounds / 2] * 1e6,
          ratio[rounds / 2],
          ratio[rounds / 4],
          ratio[3 * rounds / 4]};
}

}  // namespace arbor::bench

#endif  // ARBOR_BENCH_WORKER_AB_RACE_H_
