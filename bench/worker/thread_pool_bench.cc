// What one parallel loop of the CPU ops' thread pool costs beyond its work (a one-row decode step
// runs ~150 of them, a few to tens of µs each), against the least any fork and join pays: the
// start and the end signal, one round trip of a cache line between two threads, which two threads
// bouncing an atomic measure in the same run.
//
// BM_PoolLoop/units: loops of `units` empty units (grain 1) on a pool of one thread per hardware
// thread; `round_trips` is a loop's time in line round trips.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "kernels/cpu/thread_pool.h"

namespace arbor::worker {
namespace {

// Seconds per round trip of a cache line between this thread and another, each spinning on it.
double LineRoundTripSeconds() {
  alignas(64) std::atomic<int64_t> ball{0};
  constexpr int64_t kTrips = 100000;
  std::thread other([&ball] {
    for (int64_t i = 1; i <= kTrips; ++i) {
      while (ball.load(std::memory_order_acquire) != 2 * i - 1) {
      }
      ball.store(2 * i, std::memory_order_release);
    }
  });
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 1; i <= kTrips; ++i) {
    ball.store(2 * i - 1, std::memory_order_release);
    while (ball.load(std::memory_order_acquire) != 2 * i) {
    }
  }
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  other.join();
  return seconds.count() / kTrips;
}

void BM_PoolLoop(benchmark::State& state) {
  const int threads = std::max(2u, std::thread::hardware_concurrency());
  const double round_trip = LineRoundTripSeconds();
  kernels::ThreadPool pool(threads);
  const int64_t units = state.range(0);
  for (auto _ : state) {
    pool.ParallelFor(units, 1,
                     [](int64_t begin, int64_t end) { benchmark::DoNotOptimize(end - begin); });
  }
  state.counters["round_trip_ns"] = round_trip * 1e9;
  state.counters["round_trips"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * round_trip,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PoolLoop)->Arg(2)->Arg(8)->Arg(36)->UseRealTime();

}  // namespace
}  // namespace arbor::worker
