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
//
// Chunks shrink as a loop goes (GuidedChunkStarts): long first chunks keep each thread's reads
// of a matrix's rows one stream, short last ones let the threads end together when one of them
// ran slower. A one-row decode step streams its weights from memory, where both count.
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

// The chunks ParallelFor deals [0, n) out in, for `threads` threads: their starts, then n, into
// `starts` (its storage reused). Each takes a 1/(2·threads) share of what is left, down to a
// floor of max(grain, n/(64·threads)).
void GuidedChunkStarts(int64_t n, int64_t grain, int threads, std::vector<int64_t>& starts);

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
  // read, so it can only take a chunk of the loop whose fn_ and starts_ it then reads: the
  // caller changes those only after every chunk it handed out is done. The claims, the count of
  // chunks done (which the caller spins on) and the loop's read-only description each have a
  // cache line of their own, so that no thread's write moves a line another is reading.
  alignas(64) std::atomic<uint64_t> ticket_{0};
  alignas(64) std::atomic<int64_t> chunks_done_{0};
  alignas(64) const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  std::vector<int64_t> starts_;  // Chunk i is [starts_[i], starts_[i + 1]).

  std::vector<std::thread> workers_;
};

}  // namespace arbor::kernels

#endif  // ARBOR_KERNELS_CPU_THREAD_POOL_H_
