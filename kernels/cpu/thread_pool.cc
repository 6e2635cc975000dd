#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace arbor::kernels {
namespace {

constexpr auto kSpin = std::chrono::microseconds(50);

inline void Pause() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// Spins until done() or kSpin has passed; true when done() held.
template <typename Done>
bool SpinUntil(const Done& done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    Pause();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return done();
  }
}

constexpr uint64_t Ticket(uint64_t chunks, uint64_t next) { return chunks << 32 | next; }
constexpr uint64_t ChunksOf(uint64_t ticket) { return ticket >> 32; }
constexpr uint64_t NextOf(uint64_t ticket) { return ticket & 0xffffffffu; }
constexpr bool Claimable(uint64_t ticket) { return NextOf(ticket) < ChunksOf(ticket); }

}  // namespace

void GuidedChunkStarts(int64_t n, int64_t grain, int threads, std::vector<int64_t>& starts) {
  threads = std::max(threads, 1);
  const int64_t floor = std::max({grain, int64_t{1}, (n + 64 * threads - 1) / (64 * threads)});
  starts.assign(1, 0);
  for (int64_t at = 0; at < n;) {
    at = std::min(n, at + std::max(floor, (n - at + 2 * threads - 1) / (2 * threads)));
    starts.push_back(at);
  }
}

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_release);
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::RunChunks() {
  uint64_t ticket = ticket_.load(std::memory_order_acquire);
  while (Claimable(ticket)) {
    if (!ticket_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      continue;  // `ticket` now holds the word as it is.
    }
    const uint64_t chunk = NextOf(ticket);
    (*fn_)(starts_[chunk], starts_[chunk + 1]);
    const int64_t chunks = static_cast<int64_t>(ChunksOf(ticket));
    if (chunks_done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) {
      // Under the mutex, so a caller between its check and its sleep cannot miss the wake.
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
      return;
    }
    ticket = ticket_.load(std::memory_order_acquire);
  }
}

void ThreadPool::WorkerLoop() {
  auto woken = [&] {
    return stop_.load(std::memory_order_acquire) ||
           Claimable(ticket_.load(std::memory_order_acquire));
  };
  for (;;) {
    if (!SpinUntil(woken)) {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, woken);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    RunChunks();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (workers_.empty() || n <= grain) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mu_);
  int64_t chunks;
  {
    // No thread reads starts_ now: the last loop's word claims nothing.
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    GuidedChunkStarts(n, grain, num_threads(), starts_);
    chunks = static_cast<int64_t>(starts_.size()) - 1;
    chunks_done_.store(0, std::memory_order_relaxed);
    ticket_.store(Ticket(static_cast<uint64_t>(chunks), 0), std::memory_order_release);
  }
  start_cv_.notify_all();  // No system call when every worker is still spinning.
  RunChunks();
  auto done = [&] { return chunks_done_.load(std::memory_order_acquire) == chunks; };
  if (!SpinUntil(done)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, done);
  }
  fn_ = nullptr;
}

}  // namespace arbor::kernels
