// The roofline of a weight-streaming decode step: the best streaming read the benchmark's own
// threads (its kernels::ThreadPool) do over a buffer many times the last-level cache, mapped as
// the CPU backend maps its repacked weights (huge pages, base::HugePageArena). The best of
// several read loops (AVX-512 or AVX2 loads by the CPU's features, with and without software
// prefetch) and splits of the buffer over the threads, each run a few times in interleaved rounds,
// so that the figure is what this machine's memory gives now and `bw_frac` means what it says.
// A VM's memory is shared with its neighbours and its rate moves within minutes, so a benchmark
// reads again, with the best loop and split only, right before and after its own timed loop.
#ifndef ARBOR_BENCH_WORKER_READ_BANDWIDTH_H_
#define ARBOR_BENCH_WORKER_READ_BANDWIDTH_H_

#include <cstddef>
#include <string>

#include "base/zero_pages.h"
#include "kernels/cpu/thread_pool.h"

namespace arbor::worker {

struct ReadBandwidth {
  double bytes_per_second = 0;  // The best read's.
  std::string best;             // Which read loop and split gave it.
  std::string all;              // Each read's best, GB/s, for the record.
};

class ReadRoofline {
 public:
  // Maps and touches the buffer: 1 GiB, or 8 last-level caches if larger.
  explicit ReadRoofline(kernels::ThreadPool& pool);

  // Three rounds of every read loop and split (a second or two at 25 GB/s); remembers the best.
  ReadBandwidth MeasureAll();

  // The best read MeasureAll found, three times (a tenth of a second at 25 GB/s): bytes/s.
  double MeasureAgain();
  // The same read once: bytes/s (0 where no buffer could be mapped).
  double MeasureOnce();

 private:
  kernels::ThreadPool& pool_;
  base::ZeroPages buffer_;
  size_t best_ = 0;  // Index of the best loop and split.
};

// Bytes a streaming measurement covers so that no cache holds them: 8 last-level caches, 1 GiB at
// least, in whole MiB.
size_t StreamingBytes();

// The threads every benchmark of arbor-bench-worker runs on: one per hardware thread.
int RunThreads();
// The run's roofline, which main measures once and sets before the benchmarks run: what their
// `bw_frac` and `read_frac` divide by.
void SetRunRoofline(ReadRoofline* roofline);
ReadRoofline& RunRoofline();

// The CPU's model name, family and model (/proc/cpuinfo) and its vector extensions, e.g.
// "AMD EPYC (family 25, model 17; AVX-512)".
std::string CpuName();

}  // namespace arbor::worker

#endif  // ARBOR_BENCH_WORKER_READ_BANDWIDTH_H_
