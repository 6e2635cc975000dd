// A small fixed pool of worker threads for the CPU ops' parallel loops (GEMV/GEMM over output
// features, attention over queries and heads). Threads are created once and parked between
// calls, because a decode step issues hundreds of short parallel loops and spawning threads per
// loop would cost more than the loops themselves. Between loops a thread first spins for a few
// tens of microseconds (the next op of a step follows within that) and only then sleeps on a
// condition variable: a futex sleep and wake per loop cost a quarter of a SmolLM2 decode step.
//
// A loop ends when its last chunk is done, not when every worker has checked in: on a VM whose
// host takes a virtual CPU away for milliseconds, a worker that was not running when a loop
// began would otherwise hold up every loop until it ran again, while the threads that are
// running can take all of its chunks.
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
  // Claims and runs chunks of the current loop until none is left.
  void RunChunks();

  std::mutex call_mu_;  // One ParallelFor at a time.
  std::mutex mu_;       // Guards the sleeps on the condition variables.
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  std::atomic<bool> stop_{false};

  // The loop's chunks are claimed from one word: the next chunk's index in the low 32 bits,
  // the loop's chunk count in the high 32. A claim is a compare-and-swap on the word a thread
  // read, so it can only take a chunk of the loop whose fn_, n_ and chunk_ it then reads: the
  // caller changes those only after every chunk it handed out is done.
  std::atomic<uint64_t> ticket_{0};
  std::atomic<int64_t> chunks_done_{0};
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 1;

  std::vector<std::thread> workers_;
};

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_CPU_THREAD_POOL_H_
