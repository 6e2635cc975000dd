// The CPU ops' thread pool: every index is run once, in chunks that shrink as the loop goes, and
// a loop ends when its work is done rather than when every worker has run (a worker the system
// is not running holds up nothing).
#include "kernels/cpu/thread_pool.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <set>
#include <thread>
#include <vector>

namespace arbor::kernels {
namespace {

TEST(ThreadPool, CoversEveryIndexOnceAcrossCalls) {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 5, 1000, 4097}) {
    for (int64_t grain : {1, 7, 5000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
        EXPECT_LT(begin, end);
        for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << n << " " << grain << " " << i;
    }
  }
}

TEST(ThreadPool, ChunksShrinkToTheirFloorAndCoverTheLoop) {
  std::vector<int64_t> starts;
  for (int threads : {1, 2, 3, 16}) {
    for (int64_t n : {1, 2, 9, 64, 1000, 16032, 1 << 20}) {
      for (int64_t grain : {1, 4, 100}) {
        GuidedChunkStarts(n, grain, threads, starts);
        ASSERT_GE(starts.size(), 2u);
        EXPECT_EQ(starts.front(), 0);
        EXPECT_EQ(starts.back(), n);
        const int64_t floor = std::max<int64_t>(grain, (n + 64 * threads - 1) / (64 * threads));
        // The first takes a 1/(2·threads) share, or the floor.
        EXPECT_EQ(starts[1], std::min(n, std::max(floor, (n + 2 * threads - 1) / (2 * threads))));
        for (size_t i = 1; i < starts.size(); ++i) {
          const int64_t size = starts[i] - starts[i - 1];
          if (i + 1 < starts.size()) {
            EXPECT_GE(size, floor) << n << " " << grain << " " << threads << " chunk " << i;
          }
          if (i >= 2) {
            EXPECT_LE(size, starts[i - 1] - starts[i - 2]);
          }
        }
        // Geometric down to the floor, then at most 64·threads chunks of it.
        EXPECT_LE(starts.size(), 66u * threads + 10) << n << " " << grain << " " << threads;
      }
    }
  }
}

std::set<pid_t> ThreadsOfThisProcess() {
  std::set<pid_t> tids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return tids;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') tids.insert(static_cast<pid_t>(std::atoi(entry->d_name)));
  }
  closedir(dir);
  return tids;
}

// A thread that takes SIGUSR1 stays in the handler until the test posts the semaphore: to the
// pool, that worker is a virtual CPU the host is not running.
sem_t held_threads;
std::atomic<int> threads_held{0};
void HoldThread(int) {
  threads_held.fetch_add(1);
  while (sem_wait(&held_threads) != 0) {
  }
}

TEST(ThreadPool, ALoopDoesNotWaitForAWorkerThatIsNotRunning) {
  ASSERT_EQ(sem_init(&held_threads, 0, 0), 0);
  struct sigaction action = {};
  action.sa_handler = HoldThread;
  ASSERT_EQ(sigaction(SIGUSR1, &action, nullptr), 0);
  const std::set<pid_t> before = ThreadsOfThisProcess();
  ThreadPool pool(2);
  std::set<pid_t> workers;
  for (pid_t tid : ThreadsOfThisProcess()) {
    if (!before.contains(tid)) workers.insert(tid);
  }
  ASSERT_EQ(workers.size(), 1u);
  // Past its spin, the worker sleeps on the pool's condition variable, holding no lock.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(syscall(SYS_tgkill, getpid(), *workers.begin(), SIGUSR1), 0);
  while (threads_held.load() == 0) std::this_thread::yield();

  std::atomic<int64_t> covered{0};
  auto loops = std::async(std::launch::async, [&] {
    for (int i = 0; i < 100; ++i) {
      pool.ParallelFor(64, 1, [&](int64_t begin, int64_t end) { covered += end - begin; });
    }
  });
  const bool finished = loops.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  sem_post(&held_threads);  // Let the worker go, so the pool can be destroyed either way.
  loops.wait();
  EXPECT_TRUE(finished) << "ParallelFor waited for a worker that was not running";
  EXPECT_EQ(covered.load(), 64 * 100);
}

}  // namespace
}  // namespace arbor::kernels
