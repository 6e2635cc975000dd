// A small fixed pool of worker threads for the CPU ops' parallel loops (GEMV/GEMM over output
// features, attention over queries and heads). Threads are created once and parked between
// calls, because a decode step issues hundreds of short parallel loops and spawning threads per
// loop would cost more than the loops themselves. Between loops a thread first spins for a few
// tens of microseconds (the next op of a step follows within that) and only then sleeps on a
// condition variable: a futex sleep and wake per loop cost a quarter of a SmolLM2 decode step.
#ifndef ARBOR_KERNELS_CPU_THREAD_POOL_H_
#define ARBOR_KERNELS_CPU_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace arbor::kernels {

class ThreadPool {
 public:
  // `num_threads` counts the calling thread, which works too; values < 1 mean 1 (no workers).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint ranges covering [0, n), each at least `grain` long (except
  // the last), and returns when all are done. Concurrent calls from different threads are
  // serialised. fn must not throw and must not call ParallelFor on the same pool.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void WorkerLoop();
  void RunChunks();

  std::mutex call_mu_;  // One ParallelFor at a time.
  std::mutex mu_;       // Guards the sleeps on the condition variables.
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  // Bumped per ParallelFor (release, after fn_, n_, chunk_ are set); workers run on a change.
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> busy_workers_{0};  // Workers still running the current loop.

  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;
  std::atomic<int64_t> next_{0};

  std::vector<std::thread> workers_;
};

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_CPU_THREAD_POOL_H_
